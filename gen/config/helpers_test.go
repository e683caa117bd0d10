package config

import (
	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/conffile"
)

type yamlNode struct{ doc yaml.Node }

func (n *yamlNode) root() *yaml.Node { return n.doc.Content[0] }

func unmarshalNode(b []byte, n *yamlNode) error { return yaml.Unmarshal(b, &n.doc) }

var (
	fieldPaths = conffile.FieldPaths
	lookup     = conffile.Lookup
)
