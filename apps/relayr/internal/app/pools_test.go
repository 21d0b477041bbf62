package app

import (
	"net/http"
	"testing"
)

func TestBindingsOfOneServerShareOneBoundedTransport(t *testing.T) {
	p := NewPools(nil, 8)
	a := p.For("https://plane.example/api")
	b := p.For("HTTPS://Plane.Example/other/")
	c := p.For("https://vikunja.example")
	if a != b {
		t.Error("two base URLs of one server got two transports")
	}
	if a == c {
		t.Error("two servers share one transport")
	}
	tr, ok := a.(*http.Transport)
	if !ok || tr.MaxConnsPerHost != 8 || tr.MaxIdleConnsPerHost != 8 {
		t.Errorf("transport not bounded to 8 connections: %#v", a)
	}
	if a == http.DefaultTransport {
		t.Error("the default transport itself was bounded")
	}
	if p.Len() != 2 {
		t.Errorf("%d pools, want 2", p.Len())
	}
	if tr := NewPools(nil, 0).For("http://x").(*http.Transport); tr.MaxConnsPerHost != DefaultTrackerConns {
		t.Errorf("default bound %d, want %d", tr.MaxConnsPerHost, DefaultTrackerConns)
	}
}

type opaque struct{ http.RoundTripper }

func TestATransportThatCannotBeBoundedIsSharedAsItIs(t *testing.T) {
	rt := opaque{}
	p := NewPools(rt, 4)
	if p.For("http://a") != rt || p.For("http://b") != rt {
		t.Error("a transport that is not an *http.Transport was not used as given")
	}
}
