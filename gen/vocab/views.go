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
	return t.fill(`max by ($[cluster], namespace, pod, container) (
  max by ($[cluster], container_id) ($[series])
  * on ($[cluster], container_id) group_left (namespace, pod, container)
  $[info]
)`, Args{"series": series, "info": info})
}

// PodNetworkView is a pod's bytes per second on its HNS endpoints from a
// rate of one of windows-exporter's per-container network counters, as
// ContainerView takes its series. The exporter repeats an endpoint's
// counters on every container of the pod, so they are deduplicated (max per
// endpoint), not summed.
func (t Terms) PodNetworkView(rate, info string) string {
	return t.fill(`sum by ($[cluster], namespace, pod) (
  max by ($[cluster], namespace, pod, interface) (
    max by ($[cluster], container_id, interface) ($[rate])
    * on ($[cluster], container_id) group_left (namespace, pod)
    $[info]
  )
)`, Args{"rate": rate, "info": info})
}

// ContainerResourceView is a kube-state-metrics resource series (limits or
// requests of memory or cpu) of the pods ksm selects, restricted to the
// containers in info.
func (t Terms) ContainerResourceView(metric, resource string, ksm Selector, info string) string {
	return t.fill(`max by ($[cluster], namespace, pod, container) ($[resource])
and on ($[cluster], namespace, pod, container)
$[info]`, Args{"resource": ksm.With(Eq("resource", resource)).Of(metric), "info": info})
}

// NoMemoryLimitView is the Windows containers in info (a selector of
// ContainerInfo) that kube-state-metrics reports without a memory limit
// (recorded as ContainerNoMemoryLimit). limits is the memory limits of the
// containers in info (ContainerMemoryLimitBytes): the record, one series a
// Windows container, rather than every pod's limits in kube-state-metrics.
// A container counts only while kube-state-metrics reports it: when it is
// down or does not watch the namespace, no container is "without a limit";
// nor is an init or ephemeral container, whose limits (if any) are in other
// series. The few without a limit are found first, so the aggregation and
// that check run over those, not over every container.
func (t Terms) NoMemoryLimitView(info, limits string) string {
	return t.fill(`max by ($[cluster], namespace, pod, container) (
  $[info]
  unless on ($[cluster], namespace, pod, container)
  $[limits]
)
and on ($[cluster], namespace, pod, container)
$[containers]`, Args{
		"info":       info,
		"containers": t.KSM().Of("kube_pod_container_info"),
		"limits":     limits,
	})
}
