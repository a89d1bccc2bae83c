package main

import (
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

func TestUpOptionsTenants(t *testing.T) {
	for _, tc := range []struct {
		name, auth, tenants, env string
		want                     int
		err                      string
	}{
		{name: "none", want: 0},
		{name: "token flag", auth: "token", tenants: "2", want: 2},
		{name: "token from env", tenants: "1", env: "token", want: 1},
		{name: "no auth", tenants: "2", err: "needs --auth token"},
		{name: "auth none beats env", auth: "none", tenants: "2", env: "token", err: "needs --auth token"},
		{name: "zero", auth: "token", tenants: "0", err: "want a number >= 1"},
		{name: "not a number", auth: "token", tenants: "x", err: "want a number >= 1"},
		{name: "bad auth", auth: "basic", err: "want none or token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KOP_LAB_AUTH", tc.env)
			o, err := upOptions(tc.auth, tc.tenants)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("upOptions(%q, %q) = %v, want an error with %q", tc.auth, tc.tenants, err, tc.err)
				}
				return
			}
			if err != nil || o.Tenants != tc.want {
				t.Fatalf("upOptions(%q, %q) = %d tenants, %v; want %d", tc.auth, tc.tenants, o.Tenants, err, tc.want)
			}
			if tc.auth == "token" && o.Auth != lab.AuthToken {
				t.Errorf("auth %q", o.Auth)
			}
		})
	}
}
