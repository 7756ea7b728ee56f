{{/* The chart's name, or nameOverride. */}}
{{- define "naiad.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object names: the release name, with the chart's name unless the release already has it. */}}
{{- define "naiad.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "naiad.selectorLabels" -}}
app.kubernetes.io/name: {{ include "naiad.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "naiad.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "naiad.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "naiad.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "naiad.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Where naiad reads models: the object-store URL, else the claim's mount. */}}
{{- define "naiad.modelRepository" -}}
{{- if and .Values.modelRepository.url .Values.modelRepository.existingClaim }}
{{- fail "set one of modelRepository.url and modelRepository.existingClaim, not both" }}
{{- else if .Values.modelRepository.url }}
{{- .Values.modelRepository.url }}
{{- else if .Values.modelRepository.existingClaim }}
{{- .Values.modelRepository.mountPath }}
{{- else }}
{{- fail "set modelRepository.url (s3://, gs://, as://) or modelRepository.existingClaim" }}
{{- end }}
{{- end }}
