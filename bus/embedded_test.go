package bus

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func openBus(t *testing.T, path string) *Embedded {
	t.Helper()
	b, err := OpenEmbedded(context.Background(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b.retry = 10 * time.Millisecond
	return b
}

func TestEmbeddedDeliversEachMessageOnce(t *testing.T) {
	b := openBus(t, filepath.Join(t.TempDir(), "bus.db"))
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{}
	done := make(chan struct{})
	go b.Consume(ctx, "t", "g", 4, func(_ context.Context, m Message) error {
		mu.Lock()
		defer mu.Unlock()
		got[string(m.Value)]++
		if len(got) == 100 {
			close(done)
		}
		return nil
	})
	for i := range 100 {
		if err := b.Publish(ctx, "t", "k", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out")
	}
	waitPending(t, b, "t", 0)
	mu.Lock()
	defer mu.Unlock()
	for v, n := range got {
		if n != 1 {
			t.Fatalf("message %v handled %d times", []byte(v), n)
		}
	}
}

func TestEmbeddedRedeliversFailedMessages(t *testing.T) {
	b := openBus(t, filepath.Join(t.TempDir(), "bus.db"))
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attempts := make(chan int, 10)
	n := 0
	go b.Consume(ctx, "t", "g", 1, func(context.Context, Message) error {
		n++
		attempts <- n
		if n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err := b.Publish(ctx, "t", "k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 3; want++ {
		select {
		case got := <-attempts:
			if got != want {
				t.Fatalf("attempt %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("attempt %d never came", want)
		}
	}
	waitPending(t, b, "t", 0)
}

func TestEmbeddedKeepsUnfinishedMessagesAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.db")
	b := openBus(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go b.Consume(ctx, "t", "g", 1, func(ctx context.Context, _ Message) error {
		close(started)
		<-ctx.Done() // the process "dies" while handling
		return ctx.Err()
	})
	if err := b.Publish(context.Background(), "t", "k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	time.Sleep(50 * time.Millisecond)
	b.Close()

	b = openBus(t, path)
	defer b.Close()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 1)
	go b.Consume(ctx, "t", "g", 1, func(_ context.Context, m Message) error {
		got <- string(m.Value)
		return nil
	})
	select {
	case v := <-got:
		if v != "x" {
			t.Fatalf("got %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("message lost across restart")
	}
}

func waitPending(t *testing.T, b *Embedded, topic string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := b.Pending(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending %d, want %d", n, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
