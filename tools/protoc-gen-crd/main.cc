// File: tools/protoc-gen-crd/main.cc
//
// protoc plugin entry point: `protoc --plugin=protoc-gen-crd=<this> --crd_out=crds <protos>`
// writes one CustomResourceDefinition per message with the (slurmoperator.crd.resource) option,
// plus crds/kustomization.yaml. Optional parameter: `--crd_opt=source_prefix=proto/`.

#include <google/protobuf/compiler/plugin.h>

#include "tools/protoc-gen-crd/crd_generator.h"

int main(int argc, char* argv[]) {
  slurmop::crdgen::CrdCodeGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
