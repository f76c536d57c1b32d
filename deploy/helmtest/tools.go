package helmtest

import (
	_ "helm.sh/helm/v3/pkg/action"
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "k8s.io/api/apps/v1"
	_ "sigs.k8s.io/yaml"
	_ "github.com/relaybell/relaybell/server"
)
