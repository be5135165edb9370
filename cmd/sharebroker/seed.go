package main

import (
	"github.com/spf13/pflag"

	"github.com/sharebroker/sharebroker/broker"
)

// The seed's flags (docs/seeding.md): state made at start, before the
// Kafka listeners accept. Each is repeatable, and one value may hold
// several items separated by semicolons or line breaks, so that one
// variable (SHAREBROKER_TOPIC, SHAREBROKER_ACL, ...) gives them all.

func addSeedFlags(fs *pflag.FlagSet, f *broker.SeedFlags) {
	fs.StringVar(&f.File, "seed", "", "JSON file of topics, group configs, SCRAM users and ACLs to make at start (docs/seeding.md)")
	fs.StringArrayVar(&f.Topics, "topic", nil, "topic to make at start, NAME[:PARTITIONS[:KEY=VALUE,...]]; repeatable, or items separated by ';'")
	fs.StringArrayVar(&f.GroupConfigs, "group-config", nil, "GROUP config to set at start, GROUP:KEY=VALUE[,KEY=VALUE...] (e.g. workers:share.auto.offset.reset=earliest); repeatable, or items separated by ';'")
	fs.StringArrayVar(&f.SCRAMUsers, "scram-user", nil, "SCRAM user to make at start, as kafka-storage --add-scram: 'SCRAM-SHA-256=[name=alice,password=alice-secret]'; repeatable, or items separated by ';'")
	fs.StringArrayVar(&f.ACLs, "acl", nil, "ACL to make at start, with kafka-acls.sh's option names: 'allow-principal=User:alice,operation=Read,topic=orders'; repeatable, or items separated by ';'")
}
