// Package promtest owns promtool's unit-test file format, as Prometheus'
// rulefmt owns the rule file's: its types, its strict reading (an unknown
// key is an error at its line) and its defaults. The Prometheus rule tests
// (tests/) read promtool's files with it, and the Loki rule tests
// (lokirules) the same shape with Loki's input streams in place of
// input_series. Fields winobs does not use (fuzzy_compare,
// start_timestamp, histograms) are unknown keys, so a file that needs them
// fails rather than being half read.
package promtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// DefaultEvaluationInterval is promtool's evaluation_interval when a file
// sets none.
const DefaultEvaluationInterval = Duration(time.Minute)

// Duration is a duration in Prometheus' notation (5m, 1h30m), read as
// model.Duration reads it; a bad one is an error at its line and column.
type Duration model.Duration

// UnmarshalYAML reads a duration, naming its place when it is not one.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := model.ParseDuration(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d, column %d: %q is not a duration (5m, 1h30m)", n.Line, n.Column, n.Value)
	}
	*d = Duration(v)
	return nil
}

// String is the duration in Prometheus' notation.
func (d Duration) String() string { return model.Duration(d).String() }

// Header opens every test file: the rule files under test and how often
// they are evaluated.
type Header struct {
	// RuleFiles are relative to the test file in it; Read makes them
	// relative to the working directory.
	RuleFiles          []string `yaml:"rule_files"`
	EvaluationInterval Duration `yaml:"evaluation_interval"`
}

// File is promtool's test file for Prometheus rules.
type File struct {
	Header         `yaml:",inline"`
	GroupEvalOrder []string `yaml:"group_eval_order"`
	Tests          []Group  `yaml:"tests"`
}

// Group is one test of a Prometheus test file: series in, alerts and
// expressions expected.
type Group struct {
	Name            string            `yaml:"name"`
	Interval        Duration          `yaml:"interval"`
	InputSeries     []InputSeries     `yaml:"input_series"`
	AlertRuleTests  []AlertTest       `yaml:"alert_rule_test"`
	PromqlExprTests []ExprTest        `yaml:"promql_expr_test"`
	ExternalLabels  map[string]string `yaml:"external_labels"`
}

// InputSeries is one series in promtool's expanding notation.
type InputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

// AlertTest holds the alerts of one name firing at EvalTime.
type AlertTest struct {
	EvalTime  Duration   `yaml:"eval_time"`
	Alertname string     `yaml:"alertname"`
	ExpAlerts []ExpAlert `yaml:"exp_alerts"`
	// LabelsOnly compares the firing alerts' labels alone: set by a
	// runner, never by a file.
	LabelsOnly bool `yaml:"-"`
}

// ExpAlert is one firing alert: its labels (the rule's and the query's;
// alertname is added) and its annotations.
type ExpAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

// ExprTest holds an expression's samples at EvalTime.
type ExprTest struct {
	Expr       string      `yaml:"expr"`
	EvalTime   Duration    `yaml:"eval_time"`
	ExpSamples []ExpSample `yaml:"exp_samples"`
}

// ExpSample is one expected sample: its labels in series notation, its
// value.
type ExpSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// Test file formats: promtool's, or one that opens with its Header.
type format interface {
	header() *Header
}

func (h *Header) header() *Header { return h }

// Read decodes the test file at path into f strictly (an unknown key, or
// a value of the wrong type, is an error naming the file and the line),
// sets promtool's default evaluation interval, and makes the rule files'
// paths relative to the working directory.
func Read[F format](path string, f F) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	h := f.header()
	if h.EvaluationInterval == 0 {
		h.EvaluationInterval = DefaultEvaluationInterval
	}
	for i, rf := range h.RuleFiles {
		h.RuleFiles[i] = filepath.Join(filepath.Dir(path), rf)
	}
	return nil
}
