// Package reports owns the report by mail (issue 37): a website's report
// settings and their rules, the period a report covers, its figures (read
// from the store through package stats, and from the sends, webhooks,
// feeds and schedules of the website), and the message: HTML with a
// plain-text alternative and the chart as an inline PNG, as one
// multipart/related body queued in the e-mail outbox (sent by SMTP when
// the server has a relay).
//
// It never mails an address that is not a member's of the website's
// account at the moment the message is made: recipients who left the
// account are dropped, and the settings keep them only as written.
package reports
