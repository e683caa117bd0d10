package main

import (
	"strings"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/managed"
	"github.com/winobs/winobs/gen/managed/amp"
	"github.com/winobs/winobs/gen/managed/azuremonitor"
	"github.com/winobs/winobs/gen/view"
)

// managedSteps are the commands that take a config for a managed
// Prometheus from render to doctor, in order, each value the config holds
// quoted for the shell; <…> is what only the user's account knows.
func managedSteps(cfg *config.Config, configPath string) []string {
	c := shellQuote(configPath)
	steps := []string{
		"1. render:  go run ./cmd/gen --config " + c + " --out out",
		"2. apply:   kubectl apply -k out   # namespace " + cfg.Namespace + ", the exporter and its monitor, the log agents",
	}
	dir := "out/"
	if svc, ok := managed.Lookup(cfg.Prometheus.Managed); ok {
		dir += svc.Dir
	}
	switch cfg.Prometheus.Managed {
	case managed.AzureMonitor:
		a := cfg.Prometheus.Azure
		cm := azuremonitor.SettingsName
		steps = append(steps,
			"3. ama-metrics' settings, merged into the cluster's own (applying winobs's file over it would drop your settings):",
			"     kubectl get cm -n kube-system "+cm+" -o yaml > current.yaml",
			"     go run ./cmd/gen azure-settings --config "+c+" --current current.yaml --out merged.yaml && kubectl replace -f merged.yaml",
			"   if kubectl get finds no such ConfigMap: kubectl create -f "+dir+"ama-metrics-settings-configmap.yaml",
			"4. the rule groups, deployed into the workspace's resource group:",
			"     az deployment group create -g "+shellQuote(resourceGroup(a.Workspace))+" --template-file "+dir+"prometheus-rule-groups.json",
			"5. doctor, on the workspace's query endpoint (a token of an identity with Monitoring Data Reader on it):",
			"     az account get-access-token --resource https://prometheus.monitor.azure.com --query accessToken -o tsv > token",
			"     go run ./cmd/gen doctor --config "+c+" --prometheus \"$(az monitor account show --ids "+shellQuote(a.Workspace)+
				" --query metrics.prometheusQueryEndpoint -o tsv)\" --prometheus-bearer-token-file token",
		)
	case managed.AMP:
		m := cfg.Prometheus.AMP
		ns := amp.NamespaceName(view.Of(cfg).Managed)
		steps = append(steps,
			"3. the rules (put-rule-groups-namespace to update them later):",
			"     aws amp create-rule-groups-namespace --region "+shellQuote(m.Region)+" --workspace-id "+shellQuote(m.WorkspaceID)+
				" --name "+shellQuote(ns)+" --data fileb://"+dir+shellQuote(ns)+".yaml",
			"4. the scrape: AWS's managed scraper, in the cluster's VPC (or a Prometheus agent that remote-writes with SigV4):",
			"     aws amp create-scraper --region "+shellQuote(m.Region)+" --alias winobs --scrape-configuration configurationBlob=\"$(base64 -w0 "+dir+"scrape-config.yaml)\" \\",
			"       --source eksConfiguration=\"{clusterArn=<the EKS cluster's ARN>,subnetIds=[<subnet>,…],securityGroupIds=[<security group>]}\" \\",
			"       --destination ampConfiguration=\"{workspaceArn=arn:aws:aps:"+m.Region+":<account>:workspace/"+m.WorkspaceID+"}\"",
			"   then give its role access to the cluster (AWS: \"Set up managed collectors for Amazon EKS\"): AWS's aps-collector-role ClusterRole",
			"   bound to the user aps-collector-user (its clusterrole-binding.yml), and the scraper's role mapped to that user:",
			"     aws eks create-access-entry --cluster-name <eks cluster> --principal-arn \"$(aws amp describe-scraper --region "+shellQuote(m.Region)+
				" --scraper-id <id> --query scraper.roleArn --output text)\" --username aps-collector-user",
			"   (an aws-auth cluster: eksctl create iamidentitymapping --cluster <eks cluster> --arn <that role> --username aps-collector-user);",
			"   the Windows nodes' security group must allow TCP 9182 from the scraper's security group",
			"5. doctor, signed with SigV4 from AWS's standard credential chain (aps:QueryMetrics):",
			"     go run ./cmd/gen doctor --config "+c,
		)
	case managed.GMP:
		steps = append(steps,
			"3. the rules came with step 2 ("+dir+", a ClusterRules); GMP's managed collection must be on for its CRDs and rule evaluator",
			"4. the scrape: GMP's managed collectors run on Linux and scrape their own node alone, never a Windows node: run self-deployed",
			"   collection on Linux (docs/platforms.md), which scrapes the exporters as "+dir+"windows-exporter-monitor.yaml says",
			"5. doctor, through GMP's frontend: kubectl port-forward -n <its namespace> svc/frontend 9090, then",
			"     go run ./cmd/gen doctor --config "+c+" --prometheus http://127.0.0.1:9090",
		)
	}
	return steps
}

// resourceGroup is the resource group segment of an Azure resource id.
func resourceGroup(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		if strings.EqualFold(p, "resourceGroups") && i+1 < len(parts) {
			return parts[i+1]
		}
	}
	return "<resource group>"
}
