#include "qs/quant/gptaq.h"

#include <string>

#include "qs/error.h"
#include "qs/quant/output_error.h"

#include "cpu_gptq_solver.h"

namespace qs::quant {

QuantizedLinear quantizeGptaq(const MatrixF& w, const MatrixF& h, const MatrixF& dxxt, const GptqOptions& o,
                              double alpha) {
    if (dxxt.rows() != w.cols() || dxxt.cols() != w.cols())
        throw Error("GPTAQ: ΔXᵀX̃ is [" + std::to_string(dxxt.rows()) + ", " + std::to_string(dxxt.cols()) + "] for " +
                    std::to_string(w.cols()) + " input columns");
    CpuGptqSolver solver;
    solver.correctTowardsFullPrecision(dxxt, alpha);
    // GPTQ's error identity (Σ ½ e² = ½ tr(D H Dᵀ)) does not hold once the columns are corrected
    // towards X: the error is measured on H directly.
    GptqOptions plain = o;
    plain.measureError = false;
    QuantizedLinear q = quantizeGptq(w, MatrixF(h), plain, solver);
    if (o.measureError) {
        const OutputError e = outputErrorFromHessian(w, q.dequantize(), h);
        q.outputError = e.relative;
        q.outputMse = e.mse;
    }
    return q;
}

}  // namespace qs::quant
