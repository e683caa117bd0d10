// Package bundle lists the artifact families gen renders, in one place, so
// gen and the tests that check the rendered output build the same thing.
package bundle

import (
	"fmt"

	"github.com/winobs/winobs/alloy"
	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/dashboards"
	"github.com/winobs/winobs/eventlogshipper"
	"github.com/winobs/winobs/exporters"
	"github.com/winobs/winobs/hostprocess"
	"github.com/winobs/winobs/render"
	"github.com/winobs/winobs/rules"
)

// Builder renders one artifact family; each is a pure function of the config.
type Builder struct {
	Name  string
	Build func(*config.Config) ([]render.File, error)
}

// Builders are every artifact family of the bundle.
var Builders = []Builder{
	{"namespace", hostprocess.NamespaceFiles},
	{"rules", rules.Files},
	{"dashboards", dashboards.Files},
	{"alloy", alloy.Files},
	{"exporters", exporters.Files},
	{"eventlog-shipper", eventlogshipper.Files},
}

// Build runs every builder.
func Build(cfg *config.Config) ([]render.File, error) {
	var files []render.File
	for _, b := range Builders {
		fs, err := b.Build(cfg)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", b.Name, err)
		}
		files = append(files, fs...)
	}
	return files, nil
}
