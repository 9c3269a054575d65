package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// applyYAML sets the keys of a YAML document on c. The file is a flat mapping
// of setting keys to values. It is walked as a node tree rather than decoded
// into a struct so that every value goes through the same parser as flags
// and environment variables, and so errors name the key and its line.
func applyYAML(c *Config, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file: all defaults
		}
		return fmt.Errorf("parse: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return fmt.Errorf("parse: %w", err)
		}
		return fmt.Errorf("line %d: a second YAML document; put every setting in one", extra.Line)
	}

	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	root = resolveAlias(root)
	if root == nil || isNull(root) {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping of setting keys to values", root.Line)
	}

	seen := make(map[string]bool, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := resolveAlias(root.Content[i]), root.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: keys must be plain names", root.Content[i].Line)
		}
		s, ok := lookupSetting(k.Value)
		if !ok {
			return fmt.Errorf("line %d: unknown key %q", k.Line, k.Value)
		}
		if seen[k.Value] {
			return fmt.Errorf("line %d: key %q repeated", k.Line, k.Value)
		}
		seen[k.Value] = true
		value, err := scalarText(v, s.list)
		if err == nil {
			err = s.set(c, value)
		}
		if err != nil {
			return fmt.Errorf("key %q (line %d): %w", k.Value, k.Line, err)
		}
	}
	return nil
}

// scalarText returns the text of a scalar value (null is ""). When list is
// set a sequence of scalars is accepted too and joined with commas.
func scalarText(n *yaml.Node, list bool) (string, error) {
	n = resolveAlias(n)
	switch {
	case n == nil:
		return "", errors.New("no value")
	case n.Kind == yaml.ScalarNode:
		if isNull(n) {
			return "", nil
		}
		return n.Value, nil
	case n.Kind == yaml.SequenceNode && list:
		items := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			item = resolveAlias(item)
			if item == nil || item.Kind != yaml.ScalarNode {
				return "", errors.New("want a list of plain values")
			}
			items = append(items, item.Value)
		}
		return strings.Join(items, ","), nil
	case list:
		return "", errors.New("want a value or a list of values")
	default:
		return "", errors.New("want a single value")
	}
}

// resolveAlias follows *alias references to the anchored node. Anchors
// cannot themselves be aliases, but a bound keeps hostile input finite.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for range 8 {
		if n == nil || n.Kind != yaml.AliasNode {
			return n
		}
		n = n.Alias
	}
	return nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}
