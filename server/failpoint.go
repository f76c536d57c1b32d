package server

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/relaybell/relaybell/api"
	"github.com/relaybell/relaybell/schedules"
	"github.com/relaybell/relaybell/store"
)

// FailpointEnv names the environment variable that arms a failpoint: a
// fault the fault tests need at an exact moment that no outside signal can
// hit. Unset in production. They are:
//
//	kill-before-publish         an api node kills itself with SIGKILL after
//	                            it committed a send and before its intent is
//	                            produced
//	kill-in-schedule-occurrence a node running schedules kills itself after
//	                            it claimed a due occurrence and built its
//	                            send, before the transaction that stores it
//	kill-after-schedule-send    a node running schedules kills itself after
//	                            it committed an occurrence's send and before
//	                            its intent is produced
//	kill-in-feed-poll           a node polling a feed kills itself with
//	                            SIGKILL before the send transaction of the
//	                            third item it sends of one feed (two sent,
//	                            the rest pending)
const FailpointEnv = "RELAYBELL_FAILPOINT"

// dispatcher is the API's dispatcher: the outbox, or the armed failpoint.
func (s *Server) dispatcher() api.Dispatcher {
	if os.Getenv(FailpointEnv) == "kill-before-publish" {
		s.logger.Warn("failpoint armed: this node dies after committing its first send", "failpoint", "kill-before-publish")
		return killBeforePublish{}
	}
	return s.outbox
}

type killBeforePublish struct{}

func (killBeforePublish) Dispatch(context.Context, store.Notification) error {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// scheduleDispatcher is the schedules engine's dispatcher: the outbox, or
// the armed failpoint.
func (s *Server) scheduleDispatcher() schedules.Dispatcher {
	if os.Getenv(FailpointEnv) == "kill-after-schedule-send" {
		s.logger.Warn("failpoint armed: this node dies after committing its first occurrence's send", "failpoint", "kill-after-schedule-send")
		return killBeforePublish{}
	}
	return s.outbox
}

// scheduleFailpoint is the schedules engine's BeforeFire: nil, or the
// armed failpoint.
func scheduleFailpoint(logger *slog.Logger) func(store.Schedule, time.Time) {
	if os.Getenv(FailpointEnv) != "kill-in-schedule-occurrence" {
		return nil
	}
	logger.Warn("failpoint armed: this node dies in its first schedule occurrence", "failpoint", "kill-in-schedule-occurrence")
	return func(sc store.Schedule, occurrence time.Time) {
		logger.Warn("failpoint: dying in a schedule occurrence", "schedule_id", sc.ID, "occurrence", occurrence)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// feedFailpoint is the feeds' poller's BeforeSend: nil, or the armed
// kill-in-feed-poll failpoint.
func (s *Server) feedFailpoint() func(feedID, key string) {
	if os.Getenv(FailpointEnv) != "kill-in-feed-poll" {
		return nil
	}
	s.logger.Warn("failpoint armed: this node dies before sending the third item of a feed poll", "failpoint", "kill-in-feed-poll")
	var mu sync.Mutex
	seen := map[string]int{}
	return func(feedID, key string) {
		mu.Lock()
		seen[feedID]++
		n := seen[feedID]
		mu.Unlock()
		if n == 3 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}
