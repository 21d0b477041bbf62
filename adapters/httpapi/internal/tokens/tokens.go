// Package tokens reads the bearer tokens the API and the operator's page
// take, and tells a tenant's from any other in constant time: both
// packages check tokens this one way.
package tokens

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Tenants knows the tenants' tokens by their digests.
type Tenants struct {
	entries []entry
}

type entry struct {
	digest [sha256.Size]byte
	tenant string
}

// NewTenants answers the tenants of byToken (token → tenant); an empty
// token names no one.
func NewTenants(byToken map[string]string) *Tenants {
	t := &Tenants{}
	for tok, tenant := range byToken {
		if tok != "" {
			t.entries = append(t.entries, entry{sha256.Sum256([]byte(tok)), tenant})
		}
	}
	return t
}

// Of compares the token's digest with every known token's in constant
// time, never stopping at the first match, so the time taken tells nothing
// of which token, or how much of one, was right; it answers the token's
// tenant.
func (t *Tenants) Of(tok string) (string, bool) {
	sum := sha256.Sum256([]byte(tok))
	tenant, found := "", 0
	for _, e := range t.entries {
		eq := subtle.ConstantTimeCompare(sum[:], e.digest[:])
		if eq == 1 {
			tenant = e.tenant
		}
		found |= eq
	}
	return tenant, found == 1
}

// Bearer reads an "Authorization: Bearer <token>" header.
func Bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}
