// A command tool's argv template, filled from the call's JSON arguments without any shell:
// each template element becomes zero, one or several argv elements, never split or reparsed.
//
//   "{name}"        the whole element: the argument's value as one element (a string as is,
//                   a number or boolean as its JSON text), an array of scalars as one element
//                   per item; an absent optional argument drops the element; objects refused.
//   "x={name}.txt"  inline: the scalar's text substituted in place; absent is an error.
//   "{{", "}}"      literal braces.
#ifndef BROKER_GATEWAY_ARGV_TEMPLATE_H_
#define BROKER_GATEWAY_ARGV_TEMPLATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "airlock/v1/tools.pb.h"
#include "google/protobuf/struct.pb.h"

namespace airlock::broker {

// One piece of a template element: literal text, or a placeholder naming a parameter.
struct TemplatePiece {
  bool placeholder = false;
  std::string text;  // the literal (braces unescaped) or the parameter name
};

// Splits a template element. INVALID_ARGUMENT for a lone '{' or '}', an unclosed or empty
// placeholder, or a placeholder name outside [A-Za-z0-9_-].
[[nodiscard]] absl::StatusOr<std::vector<TemplatePiece>> ParseTemplateElement(
    absl::string_view element);

// Fills `tool`'s argv from `arguments`, first validated against the tool's parameter schema:
// unknown names refused, required ones present, types and enums as declared, no NUL bytes. A
// JSON null counts as an absent argument. Errors carry the wire code INVALID_ARGUMENT (TOO_LARGE
// past 4096 elements or 1 MiB) and name the tool and the argument. The tool must have passed
// ParseToolsConfig's validation; a schema or template that did not is INTERNAL.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> FillArgv(
    const v1::CommandTool& tool, const google::protobuf::Struct& arguments);

}  // namespace airlock::broker

#endif  // BROKER_GATEWAY_ARGV_TEMPLATE_H_
