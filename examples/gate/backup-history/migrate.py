"""The Backup project's own storage migration, as a project ships it (a post-upgrade Job or a
CLI subcommand): rewrite every Backup at the storage version, then leave only that version
in the CRD's status.storedVersions. Usage: python migrate.py KUBECONFIG"""

import sys

from kubernetes import client, config

CRD = "backups.gate.example.com"
GROUP, VERSION, PLURAL = "gate.example.com", "v1", "backups"


def main(kubeconfig: str) -> None:
    api = client.CustomObjectsApi(config.new_client_from_config(kubeconfig))
    extensions = client.ApiextensionsV1Api(api.api_client)
    items = api.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]
    for item in items:
        meta = item["metadata"]
        api.replace_namespaced_custom_object(
            GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], item
        )
    extensions.patch_custom_resource_definition_status(
        CRD, {"status": {"storedVersions": [VERSION]}}
    )
    print(f"migrated {len(items)} backups to {VERSION}")


if __name__ == "__main__":
    main(sys.argv[1])
