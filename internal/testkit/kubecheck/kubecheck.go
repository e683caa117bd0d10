// Package kubecheck checks rendered Kubernetes objects the way an API server
// would admit them, without one: custom resources against prometheus-operator's
// published CRD schemas (structural schema validation, unknown-field pruning,
// list-type and metadata rules, as apiextensions-apiserver applies them), and
// core objects against apimachinery's field validators (names, label keys and
// values, annotations, container, port, volume and env names) plus the pod
// rules the API server enforces that apimachinery does not expose
// (tolerations, selector/template agreement, requests within limits).
//
// It is test support: only tests import it, so apiextensions-apiserver stays
// out of the binaries.
package kubecheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// crd is one served version of a custom resource definition.
type crd struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
}

// Checker validates objects; build it once with New.
type Checker struct {
	crds map[string]crd // by "group/version Kind"
}

// New loads every CRD file in the dirs (CustomResourceDefinition YAML, as
// prometheus-operator publishes them).
func New(dirs ...string) (*Checker, error) {
	var files []string
	for _, dir := range dirs {
		found, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("no CRD files in %s", dir)
		}
		files = append(files, found...)
	}
	c := &Checker{crds: map[string]crd{}}
	for _, f := range files {
		if err := c.load(f); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return c, nil
}

func (c *Checker) load(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &def); err != nil {
		return err
	}
	for _, v := range def.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("version %s has no schema", v.Name)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return fmt.Errorf("version %s: %w", v.Name, err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return fmt.Errorf("version %s is not a structural schema: %w", v.Name, err)
		}
		val, _, err := validation.NewSchemaValidator(&internal)
		if err != nil {
			return fmt.Errorf("version %s: %w", v.Name, err)
		}
		c.crds[def.Spec.Group+"/"+v.Name+" "+def.Spec.Names.Kind] = crd{structural: s, validator: val}
	}
	return nil
}

// Kinds lists the custom resource kinds the checker has schemas for.
func (c *Checker) Kinds() []string {
	var out []string
	for k := range c.crds {
		out = append(out, k)
	}
	return out
}

// Document checks one YAML document and returns every problem found, each
// naming the object and the field.
func (c *Checker) Document(doc []byte) []string {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return []string{err.Error()}
	}
	var obj map[string]any
	// The API server's decoder: integers become int64, as the schema
	// validator expects.
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return []string{err.Error()}
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	id := fmt.Sprintf("%s %s", kind, name)
	var errs field.ErrorList
	if def, ok := c.crds[apiVersion+" "+kind]; ok {
		errs = def.check(obj)
	} else if core, ok := coreKinds[apiVersion+" "+kind]; ok {
		errs = core(js)
	} else {
		return []string{fmt.Sprintf("%s: no schema for %s %s", id, apiVersion, kind)}
	}
	var out []string
	for _, e := range errs {
		out = append(out, id+": "+e.Error())
	}
	return out
}

// check applies what apiextensions-apiserver applies on create: unknown
// fields (pruning), metadata, the OpenAPI schema (types, enums, patterns,
// required) and list-type uniqueness.
func (d crd) check(obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	for _, p := range pruning.PruneWithOptions(deepCopy(obj), d.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		errs = append(errs, field.Forbidden(field.NewPath(p), "unknown field: the API server would drop it"))
	}
	errs = append(errs, objectmeta.Validate(context.Background(), nil, obj, d.structural, true)...)
	errs = append(errs, validation.ValidateCustomResource(nil, obj, d.validator)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, d.structural, obj)...)
	return errs
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := utiljson.Marshal(m)
	var out map[string]any
	_ = utiljson.Unmarshal(b, &out)
	return out
}

// Split returns the YAML documents of a multi-document file.
func Split(data []byte) [][]byte {
	var out [][]byte
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) != "" {
			out = append(out, []byte(doc))
		}
	}
	return out
}
