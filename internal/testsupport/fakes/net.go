package fakes

import (
	"net"
	"testing"
)

// ClosedAddr is a 127.0.0.1 host:port nothing listens on: a port just freed, so that a dial
// to it is refused at once.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
