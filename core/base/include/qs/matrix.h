#pragma once
// The matrix types of the core. Weights are row-major [out_features, in_features], as in checkpoints.
#include "qs/eigen.h"

namespace qs {

using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VectorF = Eigen::VectorXf;
using VectorD = Eigen::VectorXd;

}  // namespace qs
