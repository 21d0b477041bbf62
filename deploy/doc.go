// Package deploy holds the files operators copy to run relayr: a hardened
// systemd unit with its configuration, for one process on the SQLite
// ledger, and Kubernetes manifests for three replicas on PostgreSQL. They
// are embedded so that the tests read exactly the files that ship.
package deploy

import "embed"

// Files are the deployment files, by their paths in this folder:
// systemd/relayr.service and systemd/relayr.toml; kubernetes/*.yaml (the
// manifests, kustomization.yaml and secret.example.yaml among them) and
// kubernetes/relayr.toml, the text configmap.yaml holds.
//
//go:embed systemd/relayr.service systemd/relayr.toml kubernetes/*.yaml kubernetes/relayr.toml
var Files embed.FS
