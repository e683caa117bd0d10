package kubecheck

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// coreKinds are the built-in kinds winobs renders, each decoded strictly
// into its Go type (an unknown field fails) and checked by field rules.
var coreKinds = map[string]func(js []byte) field.ErrorList{
	"v1 ConfigMap":      typed(configMap),
	"v1 Namespace":      typed(namespace),
	"v1 Service":        typed(service),
	"v1 ServiceAccount": typed(func(o *corev1.ServiceAccount) field.ErrorList { return objectMeta(&o.ObjectMeta, true) }),
	"apps/v1 DaemonSet": typed(daemonSet),
	"rbac.authorization.k8s.io/v1 ClusterRole": typed(func(o *rbacv1.ClusterRole) field.ErrorList {
		return rbacMeta(&o.ObjectMeta)
	}),
	"rbac.authorization.k8s.io/v1 ClusterRoleBinding": typed(func(o *rbacv1.ClusterRoleBinding) field.ErrorList {
		return rbacMeta(&o.ObjectMeta)
	}),
}

func typed[T any](check func(*T) field.ErrorList) func([]byte) field.ErrorList {
	return func(js []byte) field.ErrorList {
		obj := new(T)
		if err := yaml.UnmarshalStrict(js, obj); err != nil {
			return field.ErrorList{field.Invalid(nil, "", err.Error())}
		}
		return check(obj)
	}
}

var metaPath = field.NewPath("metadata")

func objectMeta(m *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	return apivalidation.ValidateObjectMeta(m, namespaced, apivalidation.NameIsDNSSubdomain, metaPath)
}

// RBAC object names are path segments, not DNS names (the API server's
// ValidateRBACName: not "." or "..", no "/" or "%").
func rbacMeta(m *metav1.ObjectMeta) field.ErrorList {
	return apivalidation.ValidateObjectMeta(m, false, pathSegmentName, metaPath)
}

func pathSegmentName(name string, prefix bool) []string {
	if name == "." || name == ".." {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	if strings.ContainsAny(name, "/%") {
		return []string{"may not contain '/' or '%'"}
	}
	return nil
}

func namespace(o *corev1.Namespace) field.ErrorList {
	return apivalidation.ValidateObjectMeta(&o.ObjectMeta, false, apivalidation.NameIsDNSLabel, metaPath)
}

// ConfigMaps: keys as the API server accepts them, and the 1 MiB object limit.
func configMap(o *corev1.ConfigMap) field.ErrorList {
	errs := objectMeta(&o.ObjectMeta, true)
	size := 0
	for k, v := range o.Data {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, msg))
		}
		size += len(k) + len(v)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", corev1.MaxSecretSize))
	}
	return errs
}

func service(o *corev1.Service) field.ErrorList {
	errs := objectMeta(&o.ObjectMeta, true)
	p := field.NewPath("spec")
	errs = append(errs, metavalidation.ValidateLabels(o.Spec.Selector, p.Child("selector"))...)
	names := sets.New[string]()
	for i, port := range o.Spec.Ports {
		pp := p.Child("ports").Index(i)
		if len(o.Spec.Ports) > 1 || port.Name != "" {
			errs = append(errs, portName(pp.Child("name"), port.Name)...)
		}
		if names.Has(port.Name) {
			errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
		}
		names.Insert(port.Name)
		errs = append(errs, portNum(pp.Child("port"), int(port.Port))...)
		if port.TargetPort.Type == intstr.String {
			errs = append(errs, portName(pp.Child("targetPort"), port.TargetPort.StrVal)...)
		}
	}
	return errs
}

func daemonSet(o *appsv1.DaemonSet) field.ErrorList {
	errs := objectMeta(&o.ObjectMeta, true)
	p := field.NewPath("spec")
	if o.Spec.Selector == nil {
		return append(errs, field.Required(p.Child("selector"), ""))
	}
	errs = append(errs, metavalidation.ValidateLabelSelector(o.Spec.Selector, metavalidation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	tp := p.Child("template")
	errs = append(errs, metavalidation.ValidateLabels(o.Spec.Template.Labels, tp.Child("metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(o.Spec.Template.Annotations, tp.Child("metadata", "annotations"))...)
	if sel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector); err == nil && !sel.Matches(labels.Set(o.Spec.Template.Labels)) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), o.Spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return append(errs, podSpec(&o.Spec.Template.Spec, tp.Child("spec"))...)
}

func podSpec(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))
	errs = append(errs, tolerations(s.Tolerations, p.Child("tolerations"))...)
	if a := s.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for i, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			tp := p.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms").Index(i)
			for j, req := range term.MatchExpressions {
				errs = append(errs, nodeSelectorRequirement(req, tp.Child("matchExpressions").Index(j))...)
			}
		}
	}
	volumes := sets.New[string]()
	for i, v := range s.Volumes {
		vp := p.Child("volumes").Index(i)
		errs = append(errs, dnsLabel(vp.Child("name"), v.Name)...)
		if volumes.Has(v.Name) {
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		volumes.Insert(v.Name)
	}
	names := sets.New[string]()
	for _, group := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i := range group.containers {
			c := &group.containers[i]
			cp := p.Child(group.name).Index(i)
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
			names.Insert(c.Name)
			errs = append(errs, container(c, cp, volumes)...)
		}
	}
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("containers"), ""))
	}
	if s.ServiceAccountName != "" {
		errs = append(errs, dnsSubdomain(p.Child("serviceAccountName"), s.ServiceAccountName)...)
	}
	return errs
}

func container(c *corev1.Container, p *field.Path, volumes sets.Set[string]) field.ErrorList {
	errs := dnsLabel(p.Child("name"), c.Name)
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	ports := sets.New[string]()
	for i, port := range c.Ports {
		pp := p.Child("ports").Index(i)
		if port.Name != "" {
			errs = append(errs, portName(pp.Child("name"), port.Name)...)
			if ports.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			}
			ports.Insert(port.Name)
		}
		errs = append(errs, portNum(pp.Child("containerPort"), int(port.ContainerPort))...)
	}
	for i, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(p.Child("env").Index(i).Child("name"), e.Name, msg))
		}
	}
	for i, m := range c.VolumeMounts {
		if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(p.Child("volumeMounts").Index(i).Child("name"), m.Name))
		}
	}
	for name, limit := range c.Resources.Limits {
		if req, ok := c.Resources.Requests[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p.Child("resources", "requests").Key(string(name)), req.String(), "must be less than or equal to "+string(name)+" limit of "+limit.String()))
		}
	}
	return errs
}

// tolerations applies the API server's rules (k8s.io/kubernetes
// pkg/apis/core/validation.ValidateTolerations), which apimachinery does not
// export.
func tolerations(ts []corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		tp := p.Index(i)
		if t.Key != "" {
			errs = append(errs, metavalidation.ValidateLabelName(t.Key, tp.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(tp.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(tp.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(tp.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(tp.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return errs
}

func nodeSelectorRequirement(r corev1.NodeSelectorRequirement, p *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabelName(r.Key, p.Child("key"))
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	for i, v := range r.Values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(p.Child("values").Index(i), v, msg))
		}
	}
	return errs
}

func dnsLabel(p *field.Path, s string) field.ErrorList {
	return msgs(p, s, validation.IsDNS1123Label(s))
}
func dnsSubdomain(p *field.Path, s string) field.ErrorList {
	return msgs(p, s, validation.IsDNS1123Subdomain(s))
}
func portName(p *field.Path, s string) field.ErrorList {
	return msgs(p, s, validation.IsValidPortName(s))
}
func portNum(p *field.Path, n int) field.ErrorList {
	return msgs(p, fmt.Sprint(n), validation.IsValidPortNum(n))
}

func msgs(p *field.Path, value string, ms []string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range ms {
		errs = append(errs, field.Invalid(p, value, m))
	}
	return errs
}
