package transport

import (
	"fmt"
	"reflect"
)

// implements reports whether impl implements the interface handlerType
// points to (grpc.ServiceDesc.HandlerType).
func implements(impl any, handlerType any) error {
	ht := reflect.TypeOf(handlerType).Elem()
	if st := reflect.TypeOf(impl); !st.Implements(ht) {
		return fmt.Errorf("%v does not implement %v", st, ht)
	}
	return nil
}
