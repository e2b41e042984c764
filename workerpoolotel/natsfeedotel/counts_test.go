package natsfeedotel

import (
	"reflect"
	"testing"

	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/stretchr/testify/assert"
)

// Every field of natsfeed.Counts is reported by exactly one instrument: a
// count added to Counts fails this test until instruments has a line for
// it.
func TestEveryCountIsReported(t *testing.T) {
	var c natsfeed.Counts
	v := reflect.ValueOf(&c).Elem()
	fields := map[int64]string{}
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
		fields[int64(i+1)] = v.Type().Field(i).Name
	}
	exported := map[string]string{}
	for _, s := range instruments {
		field := fields[s.value(&c)]
		assert.NotEmpty(t, field, "%s reads no field of Counts", s.name)
		assert.NotContains(t, exported, field, "%s and another instrument read Counts.%s", s.name, field)
		exported[field] = s.name
	}
	for _, field := range fields {
		assert.Contains(t, exported, field, "Counts.%s is reported", field)
	}
}
