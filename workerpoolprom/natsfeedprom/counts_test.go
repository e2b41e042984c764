package natsfeedprom

import (
	"reflect"
	"testing"

	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/stretchr/testify/assert"
)

// Every field of natsfeed.Counts is exported by exactly one metric: a
// count added to Counts fails this test until specs has a line for it.
func TestEveryCountIsExported(t *testing.T) {
	var c natsfeed.Counts
	v := reflect.ValueOf(&c).Elem()
	fields := map[int64]string{}
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
		fields[int64(i+1)] = v.Type().Field(i).Name
	}
	exported := map[string]string{}
	for _, s := range specs {
		field := fields[s.value(&c)]
		assert.NotEmpty(t, field, "%s reads no field of Counts", s.name)
		assert.NotContains(t, exported, field, "%s and another metric read Counts.%s", s.name, field)
		exported[field] = s.name
	}
	for _, field := range fields {
		assert.Contains(t, exported, field, "Counts.%s is exported", field)
	}
}
