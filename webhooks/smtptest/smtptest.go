// Package smtptest is a minimal SMTP server on loopback for tests: it
// accepts every message and keeps its DATA, dot-unstuffed.
package smtptest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server keeps the messages it receives.
type Server struct {
	Addr string
	mu   sync.Mutex
	msgs []string
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &Server{Addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s
}

// Messages are the messages received so far, in order.
func (s *Server) Messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// Wait returns the messages once there are n, failing the test after a
// minute.
func (s *Server) Wait(t testing.TB, n int) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if msgs := s.Messages(); len(msgs) >= n {
			return msgs
		} else if time.Now().After(deadline) {
			t.Fatalf("%d messages, want %d", len(msgs), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) serve(conn net.Conn) {
	defer conn.Close()
	rd := bufio.NewReader(conn)
	say := func(line string) { fmt.Fprintf(conn, "%s\r\n", line) }
	say("220 test ESMTP")
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250 test")
		case cmd == "DATA":
			say("354 go on")
			var msg strings.Builder
			for {
				l, err := rd.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				msg.WriteString(strings.TrimPrefix(l, ".")) // dot-stuffing
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, msg.String())
			s.mu.Unlock()
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}
