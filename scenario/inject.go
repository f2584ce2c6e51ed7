package scenario

import (
	"kvsim/results"
)

// LoadInject reads the [workload.inject] table of the file at path (a
// scenario, or the table kvsim trace fit prints) through the schema, as a
// scenario's: its defaults, ranges and messages. Other tables are not
// read; a file without the table is an error.
func LoadInject(path string) (*results.Inject, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	p := &parser{path: path, file: path}
	root, err := p.decode(data)
	if err != nil {
		return nil, err
	}
	t, err := p.section(root, sectionNamed("workload.inject"))
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, &Error{Path: path, Msg: "has no [workload.inject] table"}
	}
	if e := t.unknown(); e != nil {
		return nil, e
	}
	return parseInject(t)
}

// parseInject reads [workload.inject]; the schema checks types and ranges,
// this the one dependency between keys.
func parseInject(t *table) (*results.Inject, error) {
	var in results.Inject
	if err := t.bind(&in); err != nil {
		return nil, err
	}
	if in.TenantTokens > 0 && in.Tenants == 0 {
		return nil, t.errf("tenant_tokens", "needs tenants >= 1")
	}
	return &in, nil
}
