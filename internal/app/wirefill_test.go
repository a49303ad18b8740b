package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// filler sets every field JSON writes to a non-zero value, so a round trip
// through the other side's type shows each field that side lacks.
type filler struct {
	// types fill values of a type whose encoding needs a valid value (an
	// enum checked by its MarshalJSON).
	types map[reflect.Type]func() any
	// fields fill one field ("pkg.Type.Field"): the generic value would
	// not be what that side sends.
	fields map[string]func() any
	// open counts the struct types being filled, to stop recursive types
	// (a tool-result block holds blocks) after one level.
	open map[reflect.Type]int
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	// wireTime is a fixed time: both sides encode it alike.
	wireTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// filled is a new T (a pointer) with every field set.
func (f *filler) filled(t reflect.Type) (reflect.Value, error) {
	v := reflect.New(t)
	f.open = map[reflect.Type]int{}
	return v, f.fill(v.Elem(), t.Name())
}

// fill sets v; name (the JSON name of its field) is a string's value, so a
// diff reads well.
func (f *filler) fill(v reflect.Value, name string) error {
	t := v.Type()
	if mk, ok := f.types[t]; ok {
		v.Set(reflect.ValueOf(mk()))
		return nil
	}
	switch {
	case t == timeType:
		v.Set(reflect.ValueOf(wireTime))
		return nil
	case t == rawType:
		v.SetBytes([]byte(`{"k":"v"}`))
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if f.open[t.Elem()] > 0 {
			return nil
		}
		p := reflect.New(t.Elem())
		if err := f.fill(p.Elem(), name); err != nil {
			return err
		}
		v.Set(p)
	case reflect.Slice:
		if f.open[t.Elem()] > 0 {
			return nil
		}
		s := reflect.MakeSlice(t, 1, 1)
		if err := f.fill(s.Index(0), name); err != nil {
			return err
		}
		v.Set(s)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("%s: map key %s is not a string", name, t.Key())
		}
		m := reflect.MakeMap(t)
		k := reflect.New(t.Key()).Elem()
		k.SetString("k")
		e := reflect.New(t.Elem()).Elem()
		if err := f.fill(e, name); err != nil {
			return err
		}
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		return f.fillStruct(v)
	default:
		return fmt.Errorf("%s: cannot fill a %s (%s): add it to filler.types", name, t.Kind(), t)
	}
	return nil
}

// fillStruct fills the fields JSON sees: exported ones not tagged "-".
func (f *filler) fillStruct(v reflect.Value) error {
	t := v.Type()
	f.open[t]++
	defer func() { f.open[t]-- }()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if mk, ok := f.fields[t.String()+"."+sf.Name]; ok {
			v.Field(i).Set(reflect.ValueOf(mk()))
			continue
		}
		if err := f.fill(v.Field(i), name); err != nil {
			return fmt.Errorf("%s.%s: %w", t, sf.Name, err)
		}
	}
	return nil
}

// generic decodes JSON into maps, slices and scalars for comparing.
func generic(b []byte) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return v, d.Decode(&v)
}

// jsonDiff lists where got differs from want, as JSON paths (arrays as
// "[]").
func jsonDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var out []string
		for _, k := range sortedKeys(w) {
			if _, ok := g[k]; !ok {
				out = append(out, fmt.Sprintf("%s: dropped by the receiving type", join(path, k)))
				continue
			}
			out = append(out, jsonDiff(join(path, k), w[k], g[k])...)
		}
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok {
				out = append(out, fmt.Sprintf("%s: added by the receiving type (%v)", join(path, k), g[k]))
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		var out []string
		for i := range w {
			out = append(out, jsonDiff(path+"[]", w[i], g[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
	}
	return nil
}

// strip deletes the JSON paths (in jsonDiff's form) from v.
func strip(v any, paths []string) {
	for _, p := range paths {
		stripPath(v, strings.Split(p, "."))
	}
}

func stripPath(v any, parts []string) {
	key, arr := strings.CutSuffix(parts[0], "[]")
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if len(parts) == 1 && !arr {
		delete(m, key)
		return
	}
	next := []any{m[key]}
	if a, ok := m[key].([]any); ok && arr {
		next = a
	}
	for _, n := range next {
		if len(parts) > 1 {
			stripPath(n, parts[1:])
		}
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
