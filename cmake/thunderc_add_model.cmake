# thunderc_add_model(<target> MODEL <file>
#                    [OUTPUT <path.so>] [SHAPES <spec>...] [EXECUTORS <name>...] [OPTIONS <arg>...])
#
# Compiles MODEL (TorchScript .pt or torch.export .pt2) with thunderc at build time into OUTPUT (default:
# ${CMAKE_CURRENT_BINARY_DIR}/<target>.so) and its manifest (the same path with .json), as a custom command
# that re-runs when the model file, the thunderc executable or any argument changes. <target> is a custom
# target (built by `all`) carrying the paths in its properties THUNDERC_MODEL_SO and THUNDERC_MODEL_JSON:
#
#   thunderc_add_model(resnet MODEL models/resnet18.pt SHAPES x=1x3x224x224 x=8x3x224x224
#                      EXECUTORS onednn,cpp OPTIONS --cpu-target x86-64-v3)
#   add_dependencies(my_app resnet)
#   target_compile_definitions(my_app PRIVATE MODEL_SO="$<TARGET_PROPERTY:resnet,THUNDERC_MODEL_SO>")
#
# SHAPES: one `--shapes` per entry (one variant each); EXECUTORS: joined into `--executors a,b`; OPTIONS:
# any other thunderc arguments, passed as they are (`thunderc --help`).
function(thunderc_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MODEL;OUTPUT" "SHAPES;EXECUTORS;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "thunderc_add_model(${target}): unknown arguments: ${arg_UNPARSED_ARGUMENTS} "
                        "(expected MODEL, OUTPUT, SHAPES, EXECUTORS, OPTIONS)")
  endif()
  if(NOT arg_MODEL)
    message(FATAL_ERROR "thunderc_add_model(${target}): MODEL <file> is required")
  endif()
  if(NOT TARGET thunderc::thunderc)
    message(FATAL_ERROR "thunderc_add_model(${target}): no thunderc::thunderc executable target (find_package(thunderc) first)")
  endif()
  get_filename_component(model "${arg_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "thunderc_add_model(${target}): MODEL ${model} does not exist")
  endif()
  if(NOT arg_OUTPUT)
    set(arg_OUTPUT "${target}.so")
  endif()
  get_filename_component(so "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  if(NOT so MATCHES "\\.so$")
    message(FATAL_ERROR "thunderc_add_model(${target}): OUTPUT must end in .so (got ${so})")
  endif()
  string(REGEX REPLACE "\\.so$" ".json" json "${so}")

  set(args "${model}" -o "${so}")
  foreach(spec IN LISTS arg_SHAPES)
    list(APPEND args --shapes "${spec}")
  endforeach()
  if(arg_EXECUTORS)
    list(JOIN arg_EXECUTORS "," executors)
    list(APPEND args --executors "${executors}")
  endif()
  list(APPEND args ${arg_OPTIONS})

  # Ninja re-runs a command whose command line changed; Makefile generators do not. A file that changes
  # exactly when the arguments do, as a dependency, makes both re-run.
  set(stamp "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/thunderc_models/${target}.args")
  string(REPLACE ";" "\n" content "${args}")
  set(old "")
  if(EXISTS "${stamp}")
    file(READ "${stamp}" old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE "${stamp}" "${content}")
  endif()

  get_filename_component(so_dir "${so}" DIRECTORY)
  file(RELATIVE_PATH shown "${CMAKE_BINARY_DIR}" "${so}")
  add_custom_command(
    OUTPUT "${so}" "${json}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${so_dir}"
    COMMAND thunderc::thunderc ${args}
    DEPENDS "${model}" "${stamp}" "$<TARGET_FILE:thunderc::thunderc>"
    COMMENT "thunderc: compiling ${arg_MODEL} into ${shown}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${so}" "${json}")
  set_target_properties(${target} PROPERTIES THUNDERC_MODEL_SO "${so}" THUNDERC_MODEL_JSON "${json}")
endfunction()
