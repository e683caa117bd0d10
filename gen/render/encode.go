package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"go.yaml.in/yaml/v3"
	k8syaml "sigs.k8s.io/yaml"
)

func init() {
	// Long PromQL and template strings would otherwise be folded at 80 columns.
	yamlv2.FutureLineWrap()
}

// EncodeYAML encodes a non-Kubernetes document (yaml struct tags) the way all
// winobs YAML looks: two-space indent, Header first.
func EncodeYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(Header)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MaxObjectBytes is the API server's limit on one object (a ConfigMap's data
// must stay under 1 MiB; etcd refuses requests over 1.5 MiB).
const MaxObjectBytes = 1 << 20

// ErrObjectTooLarge reports an object the API server would refuse.
var ErrObjectTooLarge = errors.New("over the API server's 1 MiB object limit")

// EncodeObjects encodes Kubernetes objects (json struct tags) as YAML
// documents; an object the API server would refuse for its size is an error.
func EncodeObjects(objs []any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(Header)
	for i, o := range objs {
		y, err := objectYAML(o)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		if len(y) > MaxObjectBytes {
			var id struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			k8syaml.Unmarshal(y, &id)
			return nil, fmt.Errorf("%s %s is %d bytes, %w: render fewer channels, services or dashboards into it", id.Kind, id.Metadata.Name, len(y), ErrObjectTooLarge)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// objectYAML is o as YAML without its status: the API server owns it, and a
// typed object's zero status (a DaemonSet's counters at 0) is only noise in
// what a user reads and diffs.
func objectYAML(o any) ([]byte, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber() // numbers as written, never through float64
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if j, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return k8syaml.JSONToYAML(j)
}

// Encode returns the bytes of every file plus kustomization.yaml, keyed by
// path. It is what Write writes, and what a freshness check compares.
func Encode(files []File) (map[string][]byte, Summary, error) {
	out := map[string][]byte{}
	var sum Summary
	var resources []string
	for _, f := range files {
		if err := checkPath(f.Path); err != nil {
			return nil, nil, err
		}
		if _, dup := out[f.Path]; dup || f.Path == KustomizationFile {
			return nil, nil, fmt.Errorf("%s: written twice", f.Path)
		}
		var data []byte
		switch {
		case len(f.Objects) > 0 && f.Raw == nil:
			var err error
			if data, err = EncodeObjects(f.Objects); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", f.Path, err)
			}
			resources = append(resources, f.Path)
		case len(f.Objects) == 0 && f.Raw != nil:
			data = f.Raw
		default:
			return nil, nil, fmt.Errorf("%s: a file holds either objects or raw bytes", f.Path)
		}
		out[f.Path] = data
		sum = append(sum, Entry{Path: f.Path, Objects: len(f.Objects), Bytes: len(data)})
	}
	sort.Strings(resources)
	k, err := EncodeYAML(struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Resources  []string `yaml:"resources"`
	}{"kustomize.config.k8s.io/v1beta1", "Kustomization", resources})
	if err != nil {
		return nil, nil, err
	}
	out[KustomizationFile] = k
	sum = append(sum, Entry{Path: KustomizationFile, Bytes: len(k)})
	sort.Slice(sum, func(i, j int) bool { return sum[i].Path < sum[j].Path })
	out[RecordFile] = record(out)
	return out, sum, nil
}

func checkPath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.HasPrefix(p, "../") || strings.Contains(p, `\`) {
		return fmt.Errorf("%q: output paths must be clean, relative and slash-separated", p)
	}
	return nil
}
