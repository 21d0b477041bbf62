package main

import (
	"bytes"
	"strings"
	"testing"
)

// Without a command there is nothing to run against the database: a usage
// error, before any container is asked for.
func TestACommandIsRequired(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(nil, &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage: testdb") {
		t.Fatalf("code %d, stderr %q", code, errs.String())
	}
	if code := run([]string{"-no-such-flag"}, &out, &errs); code != 2 {
		t.Fatalf("an unknown flag: code %d", code)
	}
}
