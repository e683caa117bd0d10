package config

import (
	"reflect"

	"go.yaml.in/yaml/v3"
)

type yamlNode struct{ doc yaml.Node }

func (n *yamlNode) root() *yaml.Node { return n.doc.Content[0] }

func unmarshalNode(b []byte, n *yamlNode) error { return yaml.Unmarshal(b, &n.doc) }

// fieldPaths lists the yaml path of every leaf field of v's type.
func fieldPaths(v any) []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		if t.Kind() != reflect.Struct {
			out = append(out, path)
			return
		}
		for name, ft := range yamlFields(t) {
			walk(ft, join(path, name))
		}
	}
	walk(reflect.TypeOf(v), "")
	return out
}
