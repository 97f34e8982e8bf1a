{{- define "widget.name" -}}{{ .Chart.Name }}{{- end }}
