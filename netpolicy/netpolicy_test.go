package netpolicy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestIsPublic(t *testing.T) {
	f := func(addr string, want bool) {
		t.Helper()
		if got := IsPublic(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IsPublic(%s) = %v, want %v", addr, got, want)
		}
	}
	f("8.8.8.8", true)
	f("2606:4700::1111", true)
	f("127.0.0.1", false)
	f("10.1.2.3", false)
	f("172.16.0.1", false)
	f("192.168.1.1", false)
	f("169.254.169.254", false)
	f("100.64.0.1", false)
	f("224.0.0.1", false)
	f("0.0.0.0", false)
	f("255.255.255.255", false)
	f("::1", false)
	f("::", false)
	f("fe80::1", false)
	f("fd00::1", false)
	f("ff02::1", false)
	f("::ffff:127.0.0.1", false)
	f("::ffff:10.0.0.1", false)
	f("::ffff:8.8.8.8", true)
}

func TestCheckPushEndpoint(t *testing.T) {
	allow, err := ParseAllowList("127.0.0.1:9999, push.test:8443")
	if err != nil {
		t.Fatal(err)
	}
	f := func(u string, ok bool) {
		t.Helper()
		err := CheckPushEndpoint(u, allow)
		if (err == nil) != ok {
			t.Errorf("CheckPushEndpoint(%q) = %v, want ok=%v", u, err, ok)
		}
	}
	f("https://fcm.googleapis.com/fcm/send/abc", true)
	f("https://updates.push.services.mozilla.com/wpush/v2/x", true)
	f("http://fcm.googleapis.com/fcm/send/abc", false)
	f("https://127.0.0.1/x", false)
	f("https://[::1]/x", false)
	f("https://localhost/x", false)
	f("https://10.0.0.1/x", false)
	f("https://intranet/x", false)
	f("http://127.0.0.1:9999/push/1", true)
	f("https://127.0.0.1:9999/push/1", true)
	f("https://127.0.0.1:9998/push/1", false)
	f("https://push.test:8443/p", true)
	f("ftp://fcm.googleapis.com/x", false)
	f("not a url", false)
	f("", false)
}

func TestParseAllowListRejectsBadEntries(t *testing.T) {
	if _, err := ParseAllowList("nohostport"); err == nil {
		t.Fatal("want error for an entry without a port")
	}
	a, err := ParseAllowList("")
	if err != nil || a.Allows("127.0.0.1:80") {
		t.Fatalf("empty list: %v %v", a, err)
	}
}

func TestDialerRefusesPrivateAfterResolution(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	d := &Dialer{}
	// localhost resolves to loopback: refused although the name looks harmless.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if _, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("localhost", port)); !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("dial localhost: %v, want ErrPrivateAddress", err)
	}
	d.Allow, _ = ParseAllowList(ln.Addr().String())
	c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("allow-listed dial: %v", err)
	}
	c.Close()
}
