package rules

// Group names (record names, the volume matcher and the views are package
// vocab's, shared with the dashboards). Both groups may run next to
// kube-prometheus-stack's windows.node.rules and windows.pod.rules in one
// Prometheus.
const (
	RecordsGroup = "winobs-windows-records"
	AlertsGroup  = "winobs-windows-alerts"
)
