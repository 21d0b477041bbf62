package gitea_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/tracker/drivertest"
	"github.com/relayr-go/relayr/core/tracker/trackertest"
)

var source = tracker.Source{Tenant: "t1", Workspace: "w1"}

func TestContractLive(t *testing.T) {
	l := liveGitea(t)
	trackertest.Run(t, func(t *testing.T) trackertest.Harness {
		return trackertest.Harness{Tracker: l.connect(t), Person: l.person, Wait: time.Sleep,
			Webhook:  func(id, secret string) (http.Header, []byte) { return l.webhook(t, id, secret) },
			Deletion: func(id, secret string) (http.Header, []byte) { return l.deletion(t, id, secret) },
		}
	})
}

func TestDriverLive(t *testing.T) {
	l := liveGitea(t)
	drivertest.Run(t, func(t *testing.T) drivertest.Harness {
		return drivertest.Harness{Driver: l.driver(t), Person: l.person, Wait: time.Sleep,
			Deletion: func(id, secret string) (http.Header, []byte) { return l.deletion(t, id, secret) },
		}
	})
}
