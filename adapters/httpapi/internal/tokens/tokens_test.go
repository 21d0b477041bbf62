package tokens

import (
	"net/http"
	"testing"
)

func TestATokenNamesItsTenantAndNoOtherDoes(t *testing.T) {
	ts := NewTenants(map[string]string{"tk-a": "acme", "tk-b": "globex", "": "nobody"})
	for tok, want := range map[string]string{"tk-a": "acme", "tk-b": "globex"} {
		if got, ok := ts.Of(tok); !ok || got != want {
			t.Errorf("Of(%q) = %q, %v; want %q", tok, got, ok, want)
		}
	}
	for _, tok := range []string{"", "tk-", "tk-a ", "TK-A"} {
		if got, ok := ts.Of(tok); ok {
			t.Errorf("Of(%q) = %q: a token no tenant has", tok, got)
		}
	}
}

func TestBearer(t *testing.T) {
	for h, want := range map[string]string{"Bearer tk": "tk", "bearer  tk ": "tk", "Basic tk": "", "Bearer": "", "Bearer  ": "", "": ""} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", h)
		if got, ok := Bearer(r); got != want || ok != (want != "") {
			t.Errorf("Bearer(%q) = %q, %v; want %q", h, got, ok, want)
		}
	}
}
