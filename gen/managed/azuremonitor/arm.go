package azuremonitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Azure Resource Manager evaluates a template string that starts with '['
// and ends with ']' as an expression when the template is deployed, with
// the deployer's rights; "[[" at the start makes it a literal, which ARM
// reads without that first '[' (Microsoft, "Syntax and expressions in ARM
// templates", Escape characters). A string that does not end with ']' is a
// literal as it is. So every string value of the template is escaped when
// it is encoded, whatever its field, and no key may be an expression: no
// config value can become one by construction.

// ARMEscape is s as a template string ARM reads as the literal s.
func ARMEscape(s string) string {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return "[" + s
	}
	return s
}

// ARMUnescape is the literal ARM reads from the template string s, which
// must not be an expression.
func ARMUnescape(s string) string {
	if strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]") {
		return s[1:]
	}
	return s
}

// IsARMExpression reports whether ARM evaluates the template string s.
func IsARMExpression(s string) bool {
	return strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") && !strings.HasPrefix(s, "[[")
}

// MarshalJSON encodes the template with every string value escaped
// (ARMEscape); a key that would be an expression is an error.
func (t ARMTemplate) MarshalJSON() ([]byte, error) {
	type plain ARMTemplate // the default encoding, field order kept
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false) // expressions keep their > and &
	if err := enc.Encode(plain(t)); err != nil {
		return nil, err
	}
	return mapStrings(bytes.TrimSpace(raw.Bytes()), ARMEscape)
}

// UnmarshalJSON decodes a template, every string value read as ARM reads
// it (ARMUnescape); an expression anywhere is an error.
func (t *ARMTemplate) UnmarshalJSON(b []byte) error {
	type plain ARMTemplate
	read, err := mapStrings(b, func(s string) string { return ARMUnescape(s) })
	if err != nil {
		return err
	}
	for _, s := range StringValues(b) {
		if IsARMExpression(s) {
			return fmt.Errorf("the template holds an ARM expression: %q", s)
		}
	}
	return json.Unmarshal(read, (*plain)(t))
}

// StringValues is every string value of the JSON document b (not its
// keys), in order.
func StringValues(b []byte) []string {
	var out []string
	mapStrings(b, func(s string) string { out = append(out, s); return s })
	return out
}

// mapStrings rewrites every string value of the JSON document b with f,
// keeping everything else byte for byte; a key that would be an ARM
// expression is refused.
func mapStrings(b []byte, f func(string) string) ([]byte, error) {
	var out bytes.Buffer
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out.WriteByte(b[i])
			i++
			continue
		}
		end := i + 1
		for ; end < len(b) && b[end] != '"'; end++ {
			if b[end] == '\\' {
				end++
			}
		}
		if end >= len(b) {
			return nil, fmt.Errorf("unterminated string at byte %d", i)
		}
		lit := b[i : end+1]
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			return nil, err
		}
		next := end + 1
		for next < len(b) && (b[next] == ' ' || b[next] == '\n' || b[next] == '\t' || b[next] == '\r') {
			next++
		}
		if next < len(b) && b[next] == ':' {
			if IsARMExpression(s) {
				return nil, fmt.Errorf("key %q would be an ARM expression", s)
			}
			out.Write(lit)
		} else {
			var enc bytes.Buffer
			e := json.NewEncoder(&enc)
			e.SetEscapeHTML(false)
			if err := e.Encode(f(s)); err != nil {
				return nil, err
			}
			out.Write(bytes.TrimSpace(enc.Bytes()))
		}
		i = end + 1
	}
	return out.Bytes(), nil
}
