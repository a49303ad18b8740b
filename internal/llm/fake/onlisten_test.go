package fake

import (
	"net"
	"net/http"
	"testing"
)

// OnListen is told the address the demo model serves on (the app reserves
// it from tools' connections), and it is that address that answers.
func TestOnListenTellsTheAddress(t *testing.T) {
	t.Parallel()
	var got net.Addr
	_, stop, err := StartDemo(t.Context(), nil, OnListen(func(a net.Addr) { got = a }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if got == nil {
		t.Fatal("OnListen was not called")
	}
	res, err := http.Get("http://" + got.String() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models at %s: %s", got, res.Status)
	}
}
