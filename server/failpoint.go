package server

import (
	"context"
	"os"
	"syscall"

	"github.com/relaybell/relaybell/api"
	"github.com/relaybell/relaybell/store"
)

// FailpointEnv names the environment variable that arms a failpoint: a
// fault the fault tests need at an exact moment that no outside signal can
// hit. Unset in production. The only one:
//
//	kill-before-publish  an api node kills itself with SIGKILL after it
//	                     committed a send and before its intent is produced
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
