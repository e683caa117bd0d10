package vocab

// The container and pod views join windows-exporter's per-container series
// to their pods. The records use them for what alerts read; the pod
// dashboard runs the same joins at query time, for the containers on screen
// only.

// ContainerView gives a per-container series of windows-exporter (or a
// function of one, such as a rate) its container's real labels, one series
// per container, by joining it on container_id to info (a selector of
// ContainerInfo).
func (t Terms) ContainerView(series, info string) string {
	c := t.ClusterLabel
	return `max by (` + c + `, namespace, pod, container) (
  max by (` + c + `, container_id) (` + series + `)
  * on (` + c + `, container_id) group_left (namespace, pod, container)
  ` + info + `
)`
}

// PodNetworkView is a pod's bytes per second on its HNS endpoints from a
// rate of one of windows-exporter's per-container network counters, as
// ContainerView takes its series. The exporter repeats an endpoint's
// counters on every container of the pod, so they are deduplicated (max per
// endpoint), not summed.
func (t Terms) PodNetworkView(rate, info string) string {
	c := t.ClusterLabel
	return `sum by (` + c + `, namespace, pod) (
  max by (` + c + `, namespace, pod, interface) (
    max by (` + c + `, container_id, interface) (` + rate + `)
    * on (` + c + `, container_id) group_left (namespace, pod)
    ` + info + `
  )
)`
}

// ContainerResourceView is a kube-state-metrics resource series (limits or
// requests of memory or cpu) of the pods ksm selects, restricted to the
// containers in info.
func (t Terms) ContainerResourceView(metric, resource string, ksm Selector, info string) string {
	c := t.ClusterLabel
	return `max by (` + c + `, namespace, pod, container) (` + ksm.With(Eq("resource", resource)).Of(metric) + `)
and on (` + c + `, namespace, pod, container)
` + info
}

// NoMemoryLimitView is the Windows containers in info (a selector of
// ContainerInfo) that kube-state-metrics reports without a memory limit
// (recorded as ContainerNoMemoryLimit).
func (t Terms) NoMemoryLimitView(info string) string {
	c := t.ClusterLabel
	return `max by (` + c + `, namespace, pod, container) (
  ` + info + `
  and on (` + c + `, namespace, pod, container)
  ` + t.KSM().Of("kube_pod_container_info") + `
)
unless on (` + c + `, namespace, pod, container)
` + t.KSM(Eq("resource", "memory")).Of("kube_pod_container_resource_limits")
}
