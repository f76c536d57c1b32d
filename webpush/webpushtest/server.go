// Package webpushtest is a fake Web Push service for tests: it checks VAPID
// (RFC 8292), decrypts aes128gcm (RFC 8291, RFC 8188) with the subscribed
// browser's own keys, records every delivery and rejection, and answers as
// each browser's Behavior says. It shares no crypto code with package
// webpush, so each checks the other.
package webpushtest

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
)

// Server is a Handler served over TLS with HTTP/2 on a loopback port.
type Server struct {
	*Handler
	// URL is the origin, https://127.0.0.1:port.
	URL string

	srv *httptest.Server
}

// NewServer starts a fake push service. Close it when done.
func NewServer(opts ...Option) *Server {
	srv := httptest.NewUnstartedServer(nil)
	url := "https://" + srv.Listener.Addr().String()
	h := NewHandler(url, opts...)
	srv.Config.Handler = h
	srv.EnableHTTP2 = true
	srv.StartTLS()
	return &Server{Handler: h, URL: url, srv: srv}
}

// TLSConfig trusts the server's self-signed certificate; give it to
// webpush.WithTLSConfig.
func (s *Server) TLSConfig() *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(s.srv.Certificate())
	return &tls.Config{RootCAs: roots}
}

// HTTPClient returns an http.Client that trusts the server, for other
// senders such as webpush-go.
func (s *Server) HTTPClient() *http.Client { return s.srv.Client() }

// Close shuts the server down, closing its connections.
func (s *Server) Close() { s.srv.Close() }

// CloseClientConnections closes every connection clients have open to the
// server.
func (s *Server) CloseClientConnections() { s.srv.CloseClientConnections() }
