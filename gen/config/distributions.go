package config

import "slices"

// Distribution holds what a Kubernetes distribution (AKS, EKS, GKE, kubeadm) sets by
// default that winobs must know from the Windows node's side: the port its
// API endpoint listens on and the Service CIDR its clusters get unless told
// otherwise. docs/config.md cites where each value comes from.
type Distribution struct {
	// APIPort is the API server's port as the nodes reach it.
	APIPort int
	// ServiceCIDR is the default Service range of a new cluster.
	ServiceCIDR string
	// Note is what to check on a real cluster, written as a comment into the
	// starter config.
	Note string
}

// Distributions are the presets of `gen init --platform` (the flag's name
// kept for users' scripts).
var Distributions = map[string]Distribution{
	"aks": {APIPort: 443, ServiceCIDR: "10.0.0.0/16",
		Note: "AKS: the API server's FQDN listens on 443; --service-cidr defaults to 10.0.0.0/16."},
	"eks": {APIPort: 443, ServiceCIDR: "10.100.0.0/16",
		Note: "EKS: the endpoint listens on 443; without a service range EKS takes 10.100.0.0/16, or 172.20.0.0/16 when the VPC is in 10.0.0.0/8."},
	"gke": {APIPort: 443, ServiceCIDR: "34.118.224.0/20",
		Note: "GKE: the endpoint listens on 443; clusters of 1.27 or later get the GKE-managed Service range 34.118.224.0/20."},
	"kubeadm": {APIPort: 6443, ServiceCIDR: "10.96.0.0/12",
		Note: "kubeadm: the API server listens on 6443 (--apiserver-bind-port); --service-cidr defaults to 10.96.0.0/12."},
}

// DistributionNames are the preset names, sorted.
func DistributionNames() []string {
	var names []string
	for n := range Distributions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// distributionHint is how to read the Service CIDR off a running cluster: the
// kubernetes Service holds the first address of the range.
const distributionHint = "Check on the cluster:\n" +
	"kubectl get service kubernetes -n default -o jsonpath='{.spec.clusterIP}' prints the range's first address."
