{{- define "relaybell.name" -}}{{ .Release.Name }}-relaybell{{- end -}}

{{- define "relaybell.labels" -}}
app.kubernetes.io/name: relaybell
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object: the selector labels and the chart's. */}}
{{- define "relaybell.metaLabels" -}}
{{ include "relaybell.labels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "relaybell.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "relaybell.secret" -}}
{{- if .Values.secrets.existingSecret -}}{{ .Values.secrets.existingSecret }}{{- else -}}{{ include "relaybell.name" . }}{{- end -}}
{{- end -}}

{{/* The environment every pod shares. */}}
{{- define "relaybell.env" -}}
- name: RELAYBELL_NODE
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: RELAYBELL_HTTP_ADDR
  value: ":8080"
- name: RELAYBELL_DATA_DIR
  value: /data
- name: RELAYBELL_ADMIN_TOKEN
  valueFrom: {secretKeyRef: {name: {{ include "relaybell.secret" . }}, key: admin-token, optional: true}}
- name: RELAYBELL_PUBLIC_URL
  value: {{ .Values.publicURL | quote }}
- name: RELAYBELL_TRUST_PROXY
  value: {{ .Values.trustProxy | quote }}
- name: RELAYBELL_PUSH_ALLOW_HOSTS
  value: {{ .Values.pushAllowHosts | quote }}
- name: RELAYBELL_COUNTRY_HEADER
  value: {{ .Values.countryHeader | quote }}
- name: RELAYBELL_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- end -}}

{{/* The backends of a cluster node. */}}
{{- define "relaybell.clusterEnv" -}}
- name: RELAYBELL_POSTGRES
  valueFrom: {secretKeyRef: {name: {{ include "relaybell.secret" . }}, key: postgres-url}}
- name: RELAYBELL_KAFKA
  value: {{ required "kafka.seeds is required in cluster mode" .Values.kafka.seeds | quote }}
- name: RELAYBELL_KAFKA_REPLICATION_FACTOR
  value: {{ .Values.kafka.replicationFactor | quote }}
- name: RELAYBELL_CLICKHOUSE
  value: {{ required "clickhouse.addr is required in cluster mode" .Values.clickhouse.addr | quote }}
{{- end -}}

{{/* Fan-out and pusher nodes join the ring through the headless gossip
service, and authenticate batches with the cluster token. */}}
{{- define "relaybell.ringEnv" -}}
- name: RELAYBELL_ADVERTISE_HOST
  valueFrom: {fieldRef: {fieldPath: status.podIP}}
- name: RELAYBELL_JOIN
  value: "{{ include "relaybell.name" . }}-gossip:7946"
- name: RELAYBELL_GOSSIP_ADDR
  value: "0.0.0.0:7946"
- name: RELAYBELL_CLUSTER_TOKEN
  valueFrom: {secretKeyRef: {name: {{ include "relaybell.secret" . }}, key: cluster-token}}
{{- end -}}

{{/* The end of a container's env: the role's shutdown grace, then the
operator's extra variables (which may override it). Argument: (list $ grace). */}}
{{- define "relaybell.envTail" -}}
{{- $ := index . 0 -}}
- name: RELAYBELL_SHUTDOWN_GRACE
  value: "{{ index . 1 }}s"
{{- with $.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "relaybell.probes" -}}
readinessProbe:
  httpGet: {path: /readyz, port: http}
  periodSeconds: 5
  failureThreshold: 2
livenessProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 10
  failureThreshold: 6
startupProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 2
  failureThreshold: 150
{{- end -}}

{{/* The container's lifecycle and the pod's grace: argument (list $ grace). */}}
{{- define "relaybell.lifecycle" -}}
{{- $ := index . 0 -}}
lifecycle:
  preStop:
    sleep: {seconds: {{ $.Values.preStopSeconds }}}
{{- end -}}

{{- define "relaybell.terminationGrace" -}}
{{- $ := index . 0 -}}
{{ add $.Values.preStopSeconds (index . 1) 10 }}
{{- end -}}

{{/* Pod-level settings every workload shares: argument (list $ role). */}}
{{- define "relaybell.podSpec" -}}
{{- $ := index . 0 -}}
{{- $role := index . 1 -}}
automountServiceAccountToken: false
{{- with $.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
securityContext: {{- toYaml $.Values.podSecurityContext | nindent 2 }}
{{- if $.Values.topologySpread.enabled }}
topologySpreadConstraints:
  {{- range list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
  - maxSkew: {{ $.Values.topologySpread.maxSkew }}
    topologyKey: {{ . }}
    whenUnsatisfiable: {{ $.Values.topologySpread.whenUnsatisfiable }}
    labelSelector:
      matchLabels: {{- include "relaybell.labels" $ | nindent 8 }}
        app.kubernetes.io/component: {{ $role }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* /tmp always a volume (read-only root); /data one too on cluster nodes,
where the embedded store is unused. */}}
{{- define "relaybell.mounts" -}}
volumeMounts:
  - {name: tmp, mountPath: /tmp}
  - {name: data, mountPath: /data}
{{- end -}}
