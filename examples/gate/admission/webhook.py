"""A validating admission webhook of the example's own (standard library only): Widgets
may not have ``spec.size`` above 10, and a ``spec.colour`` must be red, green or blue —
rules the schema does not say. Run by the gate as the user's ``command``."""

import argparse
import json
import ssl
from http.server import BaseHTTPRequestHandler, HTTPServer

COLOURS = ("red", "green", "blue")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        request = review.get("request") or {}
        spec = (request.get("object") or {}).get("spec") or {}
        size, colour = spec.get("size") or 0, spec.get("colour", "red")
        problem = None
        if size > 10:
            problem = f"spec.size {size} is over 10"
        elif colour not in COLOURS:
            problem = f"spec.colour {colour!r} is not one of {', '.join(COLOURS)}"
        response = {"uid": request.get("uid", ""), "allowed": problem is None}
        if problem:
            response["status"] = {"code": 422, "message": problem}
        body = json.dumps({**review, "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    server = HTTPServer(("127.0.0.1", args.port), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
