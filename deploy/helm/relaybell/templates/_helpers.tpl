{{- define "relaybell.name" -}}{{ .Release.Name }}-relaybell{{- end -}}

{{- define "relaybell.labels" -}}
app.kubernetes.io/name: relaybell
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "relaybell.secret" -}}
{{- if .Values.secrets.secretName -}}{{ .Values.secrets.secretName }}{{- else -}}{{ include "relaybell.name" . }}{{- end -}}
{{- end -}}

{{/* The environment every role shares. */}}
{{- define "relaybell.env" -}}
- name: RELAYBELL_NODE
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: RELAYBELL_ADVERTISE_HOST
  valueFrom: {fieldRef: {fieldPath: status.podIP}}
- name: RELAYBELL_HTTP_ADDR
  value: ":8080"
- name: RELAYBELL_POSTGRES
  valueFrom: {secretKeyRef: {name: {{ include "relaybell.secret" . }}, key: postgres-url}}
- name: RELAYBELL_KAFKA
  value: {{ .Values.kafka.seeds | quote }}
- name: RELAYBELL_CLICKHOUSE
  value: {{ .Values.clickhouse.addr | quote }}
- name: RELAYBELL_ADMIN_TOKEN
  valueFrom: {secretKeyRef: {name: {{ include "relaybell.secret" . }}, key: admin-token}}
- name: RELAYBELL_CLUSTER_TOKEN
  valueFrom: {secretKeyRef: {name: {{ include "relaybell.secret" . }}, key: cluster-token}}
- name: RELAYBELL_PUSH_ALLOW_HOSTS
  value: {{ .Values.pushAllowHosts | quote }}
- name: RELAYBELL_COUNTRY_HEADER
  value: {{ .Values.countryHeader | quote }}
- name: RELAYBELL_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- end -}}

{{/* Fan-out and pusher nodes join the ring through the gossip service. */}}
{{- define "relaybell.ringEnv" -}}
- name: RELAYBELL_JOIN
  value: "{{ include "relaybell.name" . }}-gossip:7946"
- name: RELAYBELL_GOSSIP_ADDR
  value: "0.0.0.0:7946"
{{- end -}}

{{- define "relaybell.probes" -}}
readinessProbe:
  httpGet: {path: /readyz, port: http}
  periodSeconds: 5
livenessProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 10
  failureThreshold: 6
{{- end -}}
