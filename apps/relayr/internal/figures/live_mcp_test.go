package figures

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relayr-go/relayr/adapters/httpapi"
	relayrmcp "github.com/relayr-go/relayr/adapters/mcp"
	"github.com/relayr-go/relayr/apps/relayr/internal/config"
)

// The live agents' figure: agents that retry.
const (
	liveAgents     = 3
	liveAgentKeys  = 10
	liveAgentTries = 2
)

// TestLiveAgentsFileOnceThroughMCP runs the built binary, `relayr serve`,
// over a live tracker (the live runs' variables, as TestLiveFeedLatency)
// and has agents file through its MCP route with the MCP SDK's own
// client: three agents file the same ten keys at once, each calling
// file_item twice a key, as an agent that lost its answer does. Each key
// is answered one item, created once, and the tracker holds one item a
// key. It prints FIGURE lines.
func TestLiveAgentsFileOnceThroughMCP(t *testing.T) {
	for _, lt := range liveTrackers(t) {
		t.Run(lt.Name(), func(t *testing.T) { agentsFileLive(t, lt) })
	}
}

// bearer adds the tenant's token to every request of an agent.
type bearer struct{ next http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return b.next.RoundTrip(r)
}

func agentsFileLive(t *testing.T, lt live) {
	titled, ok := lt.(interface {
		countTitled(ctx context.Context, title string) (int, error)
	})
	if !ok {
		t.Fatalf("%s counts no items by title", lt.Name())
	}
	ctx := t.Context()
	s := startService(t, lt, serviceOptions{serve: true, binary: true, timings: config.Timings{Budget: unlimited}})
	endpoint := s.base + "/relayr/v1/tenants/" + tenant + "/workspaces/" + workspace + "/mcp"
	agents := make([]*gomcp.ClientSession, liveAgents)
	for i := range agents {
		c := gomcp.NewClient(&gomcp.Implementation{Name: fmt.Sprintf("agent-%d", i), Version: "v1"}, nil)
		cs, err := c.Connect(ctx, &gomcp.StreamableClientTransport{
			Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{loopback()}, Timeout: 60 * time.Second},
			DisableStandaloneSSE: true,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		agents[i] = cs
	}
	run := time.Now().UnixNano()
	key := func(k int) string { return fmt.Sprintf("live-agent-%d-%d", run, k) }
	title := func(k int) string { return fmt.Sprintf("live agent filing %d-%d", run, k) }

	type answer struct {
		key  int
		item httpapi.ItemResponse
		took time.Duration
		err  error
	}
	answers := make(chan answer, liveAgents*liveAgentKeys*liveAgentTries)
	var wg sync.WaitGroup
	start := time.Now()
	for _, cs := range agents {
		for k := range liveAgentKeys {
			wg.Go(func() {
				for range liveAgentTries {
					began := time.Now()
					res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: relayrmcp.ToolFileItem,
						Arguments: map[string]any{"key": key(k), "title": title(k), "correlation": "live-agents"}})
					a := answer{key: k, took: time.Since(began), err: err}
					if err == nil && res.IsError {
						a.err = fmt.Errorf("tool error: %v", res.StructuredContent)
					}
					if a.err == nil {
						b, _ := json.Marshal(res.StructuredContent)
						a.err = json.Unmarshal(b, &a.item)
					}
					answers <- a
				}
			})
		}
	}
	wg.Wait()
	close(answers)
	all := time.Since(start)

	ids, created := map[int]map[string]bool{}, map[int]int{}
	var took []time.Duration
	for a := range answers {
		if a.err != nil {
			t.Errorf("key %d: %v", a.key, a.err)
			continue
		}
		if ids[a.key] == nil {
			ids[a.key] = map[string]bool{}
		}
		ids[a.key][a.item.Item.ID] = true
		if a.item.How == "created" {
			created[a.key]++
		}
		took = append(took, a.took)
	}
	for k := range liveAgentKeys {
		if len(ids[k]) != 1 || created[k] != 1 {
			t.Errorf("key %d was answered items %v, created %d times; want one item, created once", k, ids[k], created[k])
		}
		n, err := titled.countTitled(ctx, title(k))
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s holds %d items titled %q, want one", lt.Name(), n, title(k))
		}
	}
	if len(took) == 0 {
		t.FailNow()
	}
	slices.Sort(took)
	name := strings.ToLower(lt.Name())
	t.Logf("%d agents called file_item %d times for %d keys in %s", liveAgents, len(took), liveAgentKeys, all.Round(time.Millisecond))
	t.Logf("FIGURE live.%s.mcp_file_item.p50 %.1f ms", name, ms(took[len(took)/2]))
	t.Logf("FIGURE live.%s.mcp_file_item.max %.1f ms", name, ms(took[len(took)-1]))
	t.Logf("FIGURE live.%s.mcp_items_per_key 1 (%d calls, %d keys)", name, len(took), liveAgentKeys)
}

// countTitled counts the project's tasks titled title, by Vikunja's
// search.
func (v *liveVikunja) countTitled(ctx context.Context, title string) (int, error) {
	return countTitledPages(ctx, v.token, title, func(page int) string {
		return fmt.Sprintf("%s/api/v1/projects/%s/tasks?s=%s&per_page=%d&page=%d", v.base, v.project, url.QueryEscape(title), titledPage, page)
	})
}

// countTitled counts the repository's issues titled title, open and
// closed, by Gitea's search.
func (g *liveGitea) countTitled(ctx context.Context, title string) (int, error) {
	return countTitledPages(ctx, g.token, title, func(page int) string {
		return fmt.Sprintf("%s?state=all&type=issues&q=%s&limit=%d&page=%d", g.issues(), url.QueryEscape(title), titledPage, page)
	})
}

// titledPage is the page a search for a title is read in.
const titledPage = 50

// countTitledPages counts the items titled title that a tracker's search
// answers, page after page (pageURL), until a page comes short.
func countTitledPages(ctx context.Context, tok, title string, pageURL func(page int) string) (int, error) {
	n := 0
	for page := 1; ; page++ {
		var items []struct {
			Title string `json:"title"`
		}
		if err := call(ctx, http.MethodGet, pageURL(page), tok, "", nil, &items); err != nil {
			return 0, err
		}
		for _, it := range items {
			if it.Title == title {
				n++
			}
		}
		if len(items) < titledPage {
			return n, nil
		}
	}
}
