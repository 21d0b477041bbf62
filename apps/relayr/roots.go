package main

// The root certificates relayr trusts where the system has none (a
// container image from scratch, a minimal host): Mozilla's, built into the
// binary, so that HTTPS to a tracker works wherever the binary runs. The
// system's roots, where there are any, are used first.
import _ "golang.org/x/crypto/x509roots/fallback"
