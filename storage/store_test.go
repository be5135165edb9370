package storage

import (
	"errors"
	"testing"
)

func TestStoreDeleteTopicByID(t *testing.T) {
	s := NewStore()
	tp, err := s.CreateTopic("a", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteTopicByID(TopicID{1}); !errors.Is(err, ErrUnknownTopicID) {
		t.Fatalf("unknown ID: got %v, want ErrUnknownTopicID", err)
	}
	got, err := s.DeleteTopicByID(tp.ID)
	if err != nil || got != tp {
		t.Fatalf("DeleteTopicByID = %v, %v", got, err)
	}
	if s.Topic("a") != nil || s.TopicByID(tp.ID) != nil {
		t.Fatal("topic still present after delete")
	}
	if _, err := s.DeleteTopic("a"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: got %v, want ErrUnknownTopic", err)
	}
	if _, err := s.CreateTopic("a", 1, nil); err != nil {
		t.Fatalf("name not reusable: %v", err)
	}
}

func TestTopicUpdateConfigs(t *testing.T) {
	s := NewStore()
	tp, err := s.CreateTopic("a", 1, map[string]string{"retention.ms": "1"})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = tp.UpdateConfigs(func(cur map[string]string) (map[string]string, error) {
		cur["retention.ms"] = "2" // a failed update must not leak this
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if v, _ := tp.Config("retention.ms"); v != "1" {
		t.Fatalf("after failed update retention.ms = %q, want 1", v)
	}
	err = tp.UpdateConfigs(func(cur map[string]string) (map[string]string, error) {
		delete(cur, "retention.ms")
		cur["cleanup.policy"] = "compact"
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.Configs(); len(got) != 1 || got["cleanup.policy"] != "compact" {
		t.Fatalf("configs = %v", got)
	}
}

// TestTopicUpdateConfigsWithoutOverrides: a topic made with no overrides
// (nil, as auto-creation makes it) hands update a map it can write to;
// it was nil, and IncrementalAlterConfigs SET on an auto-created topic
// panicked writing to it.
func TestTopicUpdateConfigsWithoutOverrides(t *testing.T) {
	s := NewStore()
	tp, err := s.CreateTopic("auto", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tp.UpdateConfigs(func(cur map[string]string) (map[string]string, error) {
		if cur == nil {
			return nil, errors.New("update was handed a nil map")
		}
		cur["retention.ms"] = "5"
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := tp.Config("retention.ms"); v != "5" {
		t.Fatalf("retention.ms = %q, want 5", v)
	}
}

func TestTopicAddPartitions(t *testing.T) {
	s := NewStore()
	tp, _ := s.CreateTopic("a", 2, nil)
	for _, n := range []int32{2, 1} {
		if err := tp.AddPartitions(n); !errors.Is(err, ErrInvalidPartitions) {
			t.Errorf("AddPartitions(%d) = %v, want ErrInvalidPartitions", n, err)
		}
	}
	if err := tp.AddPartitions(4); err != nil {
		t.Fatal(err)
	}
	if n := len(tp.Partitions()); n != 4 || tp.Partition(3) == nil || tp.Partition(3).Index != 3 {
		t.Fatalf("got %d partitions", n)
	}
}
