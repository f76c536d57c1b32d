package automations

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// pendingBatch is how many pending triggers Pending reads at a time.
const pendingBatch = 100

// runID is the id of the run a trigger starts of an automation: new for
// a trigger without a key, else derived from the key and the automation,
// the same each time the trigger is done.
func runID(key, automationID string) string {
	if key == "" {
		return uuid.NewString()
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("relaybell:trigger/"+key+"/"+automationID)).String()
}

// Pending starts the runs of the subscribed and topic_opt_in triggers
// that registrations and imports stored in their own transactions
// (store.PendingTrigger), the person's or, with subscriberID "", the
// website's, and removes each once its runs started. A trigger is stored
// with what caused it, so a request that dies before its runs start
// loses nothing: the person's next registration (the SDK registers on
// every page view) or the next import does it. A trigger done twice
// starts its runs once (their ids derive from its id). Each run counts
// from the trigger's own time. It returns how many runs it started.
func (s *Service) Pending(ctx context.Context, websiteID, subscriberID string) (int, error) {
	started := 0
	for {
		list, err := s.st.PendingTriggers(ctx, websiteID, subscriberID, pendingBatch)
		if err != nil {
			return started, err
		}
		for _, p := range list {
			n, err := s.startMatching(ctx, p.WebsiteID, p.SubscriberID, p.TriggerType, p.ID, p.At, func(d Definition) bool {
				return p.TriggerType != TriggerTopicOptIn || d.Trigger.TopicID == p.TopicID
			})
			if err != nil {
				return started, fmt.Errorf("starting the runs of trigger %s: %w", p.ID, err)
			}
			started += n
			if err := s.st.DoneTrigger(ctx, p.ID); err != nil {
				return started, err
			}
		}
		if len(list) < pendingBatch {
			return started, nil
		}
	}
}
