"""A conversion webhook of the example's own (standard library only), as a Go webhook built
on ``metav1.Duration`` behaves: it decodes ``spec.every`` as a Go duration and fails the
review on any other text ("time: invalid duration"), which the CRD's schema (a plain
string) lets the API server accept. Otherwise it only changes the apiVersion."""

import argparse
import json
import re
import ssl
from http.server import BaseHTTPRequestHandler, HTTPServer

DURATION = re.compile(r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+|0")


def convert(request: dict) -> dict:
    converted = []
    for obj in request.get("objects") or []:
        every = (obj.get("spec") or {}).get("every")
        if every is not None and not DURATION.fullmatch(every):
            message = f"time: invalid duration {json.dumps(every)}"
            return {
                "uid": request.get("uid", ""),
                "result": {"status": "Failed", "message": message},
            }
        converted.append({**obj, "apiVersion": request["desiredAPIVersion"]})
    return {
        "uid": request.get("uid", ""),
        "result": {"status": "Success"},
        "convertedObjects": converted,
    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        answer = {**review, "response": convert(review.get("request") or {})}
        answer.pop("request", None)
        body = json.dumps(answer).encode()
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
