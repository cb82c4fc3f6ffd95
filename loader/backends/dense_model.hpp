// The example dense network (specs/examples/dense.fbs), read from a payload and the container's
// named data, shared by the example backends. Reading verifies the flatbuffer first, then checks
// every layer's shape, its named data sizes and alignment; weights are used in place.
#ifndef FATPTE_BACKENDS_DENSE_MODEL_HPP_
#define FATPTE_BACKENDS_DENSE_MODEL_HPP_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "dense_generated.h"
#include "fatpte/backend.h"

namespace fatpte_example {

struct Layer {
  std::uint32_t inputs = 0;
  std::uint32_t outputs = 0;
  const float* weights = nullptr;  // outputs x inputs, row-major, inside the container mapping
  const float* bias = nullptr;     // outputs values, or nullptr
  bool relu = false;
};

struct Model {
  std::vector<Layer> layers;
  std::size_t widest = 0;
};

inline int say(char* why, std::size_t size, const std::string& text) {
  if (why != nullptr && size > 0) std::snprintf(why, size, "%s", text.c_str());
  return 1;
}

// Named data of `floats` float32 values, 4-byte aligned (the container aligns segments).
inline int tensor(const fatpte_named_data* nd, const ::flatbuffers::String* key, std::uint64_t floats,
                  const float** out, char* why, std::size_t why_size) {
  const void* data = nullptr;
  std::uint64_t size = 0;
  if (nd == nullptr || nd->lookup == nullptr || nd->lookup(nd->context, key->c_str(), &data, &size) != 0) {
    return say(why, why_size, "named data '" + key->str() + "' is not in the container");
  }
  if (size != floats * 4) {
    return say(why, why_size, "named data '" + key->str() + "' has " + std::to_string(size) + " bytes, the layer needs " +
                                  std::to_string(floats * 4));
  }
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(float) != 0) {
    return say(why, why_size, "named data '" + key->str() + "' is not aligned for float32");
  }
  *out = static_cast<const float*>(data);
  return 0;
}

inline int read_model(const void* payload, std::uint64_t size, const fatpte_named_data* nd, Model& model, char* why,
                      std::size_t why_size) {
  ::flatbuffers::Verifier verifier(static_cast<const std::uint8_t*>(payload), static_cast<std::size_t>(size));
  if (!fatpte::example::VerifyNetworkBuffer(verifier)) {
    return say(why, why_size, "the payload is not a dense network (specs/examples/dense.fbs)");
  }
  const auto* net = fatpte::example::GetNetwork(payload);
  std::uint32_t previous = 0;
  for (const auto* l : *net->layers()) {
    Layer layer;
    layer.inputs = l->inputs();
    layer.outputs = l->outputs();
    if (layer.inputs == 0 || layer.outputs == 0 || layer.inputs > (1u << 20) || layer.outputs > (1u << 20)) {
      return say(why, why_size, "a layer has a zero or huge dimension");
    }
    if (previous != 0 && layer.inputs != previous) return say(why, why_size, "layer shapes do not chain");
    previous = layer.outputs;
    if (tensor(nd, l->weights(), std::uint64_t{layer.inputs} * layer.outputs, &layer.weights, why, why_size)) return 1;
    if (l->bias() != nullptr && tensor(nd, l->bias(), layer.outputs, &layer.bias, why, why_size)) return 1;
    layer.relu = l->activation() == fatpte::example::Activation_RELU;
    model.widest = std::max<std::size_t>(model.widest, std::max(layer.inputs, layer.outputs));
    model.layers.push_back(layer);
  }
  if (model.layers.empty()) return say(why, why_size, "the network has no layer");
  return 0;
}

// Runs the network with `dot` computing one output of a layer: bias + sum(w[i] * x[i]).
template <typename Dot>
int run_model(const Model& m, const float* input, std::size_t input_count, float* output, std::size_t capacity,
              std::size_t* output_count, char* why, std::size_t why_size, Dot dot) {
  if (input_count != m.layers.front().inputs) {
    return say(why, why_size, "the network takes " + std::to_string(m.layers.front().inputs) + " inputs, got " +
                                  std::to_string(input_count));
  }
  if (capacity < m.layers.back().outputs) return say(why, why_size, "the output buffer is too small");
  std::vector<float> a(input, input + input_count), b;
  for (const Layer& l : m.layers) {
    b.assign(l.outputs, 0.0f);
    for (std::uint32_t o = 0; o < l.outputs; ++o) {
      float v = dot(l.weights + std::size_t{o} * l.inputs, a.data(), l.inputs) + (l.bias ? l.bias[o] : 0.0f);
      b[o] = l.relu && v < 0.0f ? 0.0f : v;
    }
    a.swap(b);
  }
  std::memcpy(output, a.data(), a.size() * sizeof(float));
  *output_count = a.size();
  return 0;
}

// The backend ABI functions every example backend shares (include/fatpte/backend.h): only the
// dot product and is_available differ between them. Nothing here throws across the ABI.
inline int load(const void* payload, std::uint64_t size, const fatpte_named_data* nd, void** model, char* why,
                std::size_t why_size) {
  auto* m = new (std::nothrow) Model();
  if (m == nullptr) return say(why, why_size, "out of memory");
  try {
    if (read_model(payload, size, nd, *m, why, why_size) != 0) {
      delete m;
      return 1;
    }
  } catch (...) {
    delete m;
    return say(why, why_size, "out of memory");
  }
  *model = m;
  return 0;
}

template <float (*Dot)(const float*, const float*, std::uint32_t)>
int run(void* model, const float* in, std::size_t n_in, float* out, std::size_t cap, std::size_t* n_out, char* why,
        std::size_t why_size) {
  try {
    return run_model(*static_cast<Model*>(model), in, n_in, out, cap, n_out, why, why_size, Dot);
  } catch (...) {
    return say(why, why_size, "out of memory");
  }
}

inline void unload(void* model) { delete static_cast<Model*>(model); }

}  // namespace fatpte_example

#endif  // FATPTE_BACKENDS_DENSE_MODEL_HPP_
