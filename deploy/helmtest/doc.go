// Package helmtest checks the Helm chart in deploy/helm/relaybell with the
// real Helm, as a library: `helm lint --strict` and `helm template` for the
// chart's default values and each example in deploy/helm/examples, every
// rendered object decoded strictly into its Kubernetes type, and every pod's
// arguments and environment parsed by the relaybell binary's own flag set.
//
// It is a module of its own so that Helm's dependencies stay out of the
// service's go.mod: run it with `make test-chart` (cd deploy/helmtest && go
// test ./...).
package helmtest
