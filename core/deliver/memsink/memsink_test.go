package memsink_test

import (
	"testing"

	"github.com/relayr-go/relayr/core/deliver/memsink"
	"github.com/relayr-go/relayr/core/deliver/sinktest"
)

func harness(s *memsink.Sink) sinktest.Harness {
	return sinktest.Harness{Sink: s, Taken: func(*testing.T) []string {
		var ids []string
		for _, e := range s.Taken() {
			ids = append(ids, e.ID)
		}
		return ids
	}}
}

// TestSink runs the sink suite over the in-memory sink, the first every
// sink's module runs after.
func TestSink(t *testing.T) {
	sinktest.Run(t, sinktest.Setup{
		Virtual: true,
		New:     func(*testing.T) sinktest.Harness { return harness(&memsink.Sink{}) },
		Refusals: map[string]func(*testing.T) sinktest.Refusing{
			"Refusing": func(*testing.T) sinktest.Refusing {
				s := &memsink.Sink{}
				s.Refuse(true)
				return sinktest.Refusing{Harness: harness(s), Up: func() { s.Refuse(false) }}
			},
		},
	})
}
