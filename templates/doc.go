// Package templates is what a template is and how a send uses one (issue
// 35, part 1): a template is a name and the content members of a send
// request (spec 2.1: title, body, url, icon, image, badge, actions, ttl,
// tag, requireInteraction, translations), merge tags included.
//
// It owns the definition and its validation (Definition.Check, which
// checks the content as a send's is checked where that makes sense for
// content a send may still complete: links, buttons, languages and the
// payload budget with every merge tag at its fallback) and the Service
// that resolves a templateId into a send request (Service.Apply).
//
// # Resolution
//
// A template fills every content member a request leaves out; members
// the request gives override the template's. POST /notifications
// resolves its templateId before notification.Prepare, so the stored
// notification and its send body keep the resolved content: a change to
// the template later changes no past send.
//
// Automations' messages and journeys' send steps that name a templateId
// are resolved when they are sent (the engines call Fill), so a change
// to the template reaches every message sent after it. Their definitions
// are checked at save time with the template's content filled in, so a
// message whose title only the template gives is valid. That is why a
// template that something names cannot be deleted
// (store.Templates.DeleteTemplate answers what names it: the API's 409
// template_in_use).
package templates
