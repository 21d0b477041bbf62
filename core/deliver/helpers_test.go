package deliver_test

import "errors"

// The workspace every log follower here delivers from.
const (
	tenant    = "acme"
	workspace = "ops"
)

var errDisk = errors.New("disk on fire")
