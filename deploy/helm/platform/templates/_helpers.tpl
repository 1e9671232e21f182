{{/* The release's name prefix of every object: <release>, or <release>-platform when the release does not say platform. */}}
{{- define "platform.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* selector labels of one component (a role, a projector, migrate): dict root component */}}
{{- define "platform.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "platform.labels" -}}
{{ include "platform.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Values.image.tag | default .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "platform.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* the Secret holding the credentials: yours (secrets.existingSecret) or the one the chart makes */}}
{{- define "platform.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "platform.fullname" .)) -}}
{{- end -}}

{{- define "platform.rootUrl" -}}
{{- .Values.rootUrl | default (printf "http://%s-gateway.%s.svc:%v" (include "platform.fullname" .) .Release.Namespace .Values.roles.gateway.service.port) -}}
{{- end -}}

{{/* credentials: variable name → whether a pod cannot start without it */}}
{{- define "platform.secretKeys" -}}
PLATFORM_SECRET_KEY: true
DATABASE_URL: true
CLICKHOUSE_URL: true
REDIS_URL: false
SMTP_URL: false
S3_ACCESS_KEY: false
S3_SECRET_KEY: false
OIDC_PROVIDERS: false
STRIPE_WEBHOOK_SECRET: false
PADDLE_WEBHOOK_SECRET: false
METRICS_TOKEN: false
{{- end -}}

{{/* one env entry when the value is not empty: dict name value */}}
{{- define "platform.envVar" -}}
{{- if ne (toString .value) "" }}
- name: {{ .name }}
  value: {{ toString .value | quote }}
{{- end -}}
{{- end -}}

{{/* the environment every process of the release shares: dict root poolSize [httpWorkers] */}}
{{- define "platform.env" -}}
{{- $v := .root.Values -}}
{{- $e := dict
  "PLATFORM_ENV" $v.platformEnv
  "LOG_LEVEL" $v.logLevel
  "HOST" "0.0.0.0"
  "PORT" "8080"
  "ROOT_URL" (include "platform.rootUrl" .root)
  "APP_URL" $v.appUrl
  "SHUTDOWN_GRACE_MS" $v.shutdownGraceMs
  "CORS_ALLOWED_ORIGINS" $v.corsAllowedOrigins
  "DATABASE_POOL_SIZE" .poolSize
  "HTTP_WORKERS" (.httpWorkers | default "")
  "BILLING_ENABLED" (ternary "true" "false" $v.billing.enabled)
  "KAFKA_BROKERS" $v.kafka.brokers
  "KAFKA_PARTITIONS" $v.kafka.partitions
  "KAFKA_NAMESPACE" $v.kafka.namespace
  "CLICKHOUSE_DATABASE" $v.clickhouse.database
  "REDIS_KEY_PREFIX" $v.redis.keyPrefix
  "S3_ENDPOINT" $v.s3.endpoint
  "S3_BUCKET" $v.s3.bucket
  "S3_REGION" $v.s3.region
  "CLAMD_HOST" $v.clamd.host
  "CLAMD_PORT" (ternary $v.clamd.port "" (ne $v.clamd.host ""))
  "MAIL_FROM" $v.mail.from
  "OTEL_EXPORTER_OTLP_ENDPOINT" $v.otelEndpoint
-}}
{{- $secretKeys := include "platform.secretKeys" .root | fromYaml -}}
{{- range $name, $value := $v.env }}
{{- if hasKey $secretKeys $name }}
{{- fail (printf "env.%s is a credential: put it in the Secret (secrets.existingSecret or secrets.values)" $name) }}
{{- end }}
{{- $_ := set $e $name $value }}
{{- end }}
{{- range $name := keys $e | sortAlpha }}
{{- include "platform.envVar" (dict "name" $name "value" (get $e $name)) }}
{{- end }}
{{- $secret := include "platform.secretName" .root }}
{{- range $name := keys $secretKeys | sortAlpha }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $name }}
      {{- if not (get $secretKeys $name) }}
      optional: true
      {{- end }}
{{- end }}
{{- end -}}

{{/* the mutual-TLS files of billing's gRPC, mounted read-only */}}
{{- define "platform.grpcTlsDir" -}}/etc/platform/grpc{{- end -}}

{{- define "platform.grpcTlsEnv" -}}
- name: GRPC_TLS_CERT
  value: {{ include "platform.grpcTlsDir" . }}/{{ .side }}.crt
- name: GRPC_TLS_KEY
  value: {{ include "platform.grpcTlsDir" . }}/{{ .side }}.key
- name: GRPC_TLS_CA
  value: {{ include "platform.grpcTlsDir" . }}/ca.crt
{{- end -}}

{{/*
One Deployment of `platform serve …`: dict root component args replicas autoscaling poolSize
httpWorkers resources extraEnv (a list) ports (a list) grpcSide (server|client|"").
*/}}
{{- define "platform.deployment" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $sel := dict "root" $root "component" .component -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "platform.fullname" $root }}-{{ .component }}
  labels:
    {{- include "platform.labels" $sel | nindent 4 }}
spec:
  {{- if not .autoscaling }}
  replicas: {{ .replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "platform.selectorLabels" $sel | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  template:
    metadata:
      labels:
        {{- include "platform.labels" $sel | nindent 8 }}
      {{- $annotations := deepCopy ($v.podAnnotations | default dict) }}
      {{- if not $v.secrets.existingSecret }}
      {{- /* a change of the chart-made Secret rolls the pods, which read it at start */}}
      {{- $_ := set $annotations "checksum/secrets" (toYaml $v.secrets.values | sha256sum) }}
      {{- end }}
      {{- with $annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      automountServiceAccountToken: false
      {{- with $v.serviceAccountName }}
      serviceAccountName: {{ . }}
      {{- end }}
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $v.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      containers:
        - name: platform
          image: {{ include "platform.image" $root }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          args: {{ toJson .args }}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
            {{- range .ports }}
            - name: {{ .name }}
              containerPort: {{ .port }}
              protocol: TCP
            {{- end }}
          env:
            {{- include "platform.env" (dict "root" $root "poolSize" .poolSize "httpWorkers" .httpWorkers) | trim | nindent 12 }}
            {{- with .extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- if .grpcSide }}
            {{- include "platform.grpcTlsEnv" (dict "side" .grpcSide) | nindent 12 }}
            {{- end }}
          startupProbe:
            httpGet: { path: /live, port: http }
            {{- toYaml $v.probes.startup | nindent 12 }}
          livenessProbe:
            httpGet: { path: /live, port: http }
            {{- toYaml $v.probes.liveness | nindent 12 }}
          readinessProbe:
            httpGet: { path: /ready, port: http }
            {{- toYaml $v.probes.readiness | nindent 12 }}
          resources:
            {{- toYaml .resources | nindent 12 }}
          securityContext:
            {{- toYaml $v.securityContext | nindent 12 }}
          volumeMounts:
            - { name: data, mountPath: /data }
            - { name: tmp, mountPath: /tmp }
            {{- if .grpcSide }}
            - { name: grpc-tls, mountPath: {{ include "platform.grpcTlsDir" . }}, readOnly: true }
            {{- end }}
      volumes:
        - { name: data, emptyDir: {} }
        - { name: tmp, emptyDir: {} }
        {{- if .grpcSide }}
        - name: grpc-tls
          secret:
            secretName: {{ $v.grpc.tlsSecret }}
            defaultMode: 0440
            items:
              - { key: ca.crt, path: ca.crt }
              - { key: {{ .grpcSide }}.crt, path: {{ .grpcSide }}.crt }
              - { key: {{ .grpcSide }}.key, path: {{ .grpcSide }}.key }
        {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $v.spreadAcrossNodes }}
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "platform.selectorLabels" $sel | nindent 14 }}
      {{- end }}
{{- end -}}

{{/* a PodDisruptionBudget selecting what platform.deployment selects: dict root component pdb */}}
{{- define "platform.pdb" -}}
{{- $sel := dict "root" .root "component" .component -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "platform.fullname" .root }}-{{ .component }}
  labels:
    {{- include "platform.labels" $sel | nindent 4 }}
spec:
  {{- if hasKey .pdb "minAvailable" }}
  minAvailable: {{ .pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ .pdb.maxUnavailable | default 1 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "platform.selectorLabels" $sel | nindent 6 }}
{{- end -}}

{{/* the roles of `platform serve`: component, its key under .Values.roles, whether it answers HTTP traffic, its side of billing's gRPC */}}
{{- define "platform.roles" -}}
roles:
  - { component: gateway, key: gateway, traffic: true, autoscaled: true, grpcSide: {{ ternary "client" "" .Values.billing.enabled }} }
  - { component: write-api, key: writeApi, traffic: true, autoscaled: true, grpcSide: {{ ternary "server" "" .Values.billing.enabled }} }
  - { component: read-api, key: readApi, traffic: true, autoscaled: true, grpcSide: '' }
  - { component: workers, key: workers, traffic: false, autoscaled: false, grpcSide: '' }
{{- end -}}

{{/* a projection's name as a component: audit.domain → projector-audit-domain */}}
{{- define "platform.projectorComponent" -}}
projector-{{ . | lower | replace "." "-" | replace "_" "-" | trunc 40 | trimSuffix "-" }}
{{- end -}}
