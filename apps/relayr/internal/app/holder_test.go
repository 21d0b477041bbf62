package app

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Each run is a replica of its own, under the configured name.
func TestEachRunHoldsUnderANameOfItsOwn(t *testing.T) {
	a, b := holderName("relayr-1"), holderName("relayr-1")
	if a == b || !strings.HasPrefix(a, "relayr-1~") || !strings.HasPrefix(b, "relayr-1~") || len(a) != len("relayr-1~")+4 {
		t.Fatalf("two runs named %q and %q, want relayr-1~ and four hex digits each, apart", a, b)
	}
	host, _ := os.Hostname()
	if d := holderName(""); !strings.HasPrefix(d, fmt.Sprintf("%s-%d~", host, os.Getpid())) {
		t.Fatalf("the default name %q, want the host and process id first", d)
	}
}
